import * as echarts from 'echarts/core';
import {LineChart, BarChart, HeatmapChart, ScatterChart} from 'echarts/charts';
import {GridComponent, TooltipComponent, LegendComponent, TitleComponent, MarkLineComponent, DataZoomComponent, VisualMapComponent, ToolboxComponent} from 'echarts/components';
import {CanvasRenderer} from 'echarts/renderers';
echarts.use([LineChart, BarChart, HeatmapChart, ScatterChart, GridComponent, TooltipComponent, LegendComponent, TitleComponent, MarkLineComponent, DataZoomComponent, VisualMapComponent, ToolboxComponent, CanvasRenderer]);
window.echarts = echarts;
