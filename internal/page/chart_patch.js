
goecharts_{{ID}}.setOption({{PATCH}});
