package admin

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics is GET /metrics in the Prometheus text format: the server's own
// collectors (read when scraped) with the process's and the Go runtime's.
func Metrics(cs ...prometheus.Collector) Route {
	reg := prometheus.NewRegistry()
	reg.MustRegister(append(cs, collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), collectors.NewGoCollector())...)
	return Route{Pattern: "GET /metrics", Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})}
}
