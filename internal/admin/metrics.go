package admin

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics is GET /metrics in the Prometheus text format: the server's own
// collector (read when scraped) with the process's and the Go runtime's.
func Metrics(c prometheus.Collector) Route {
	reg := prometheus.NewRegistry()
	reg.MustRegister(c, collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), collectors.NewGoCollector())
	return Route{Pattern: "GET /metrics", Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})}
}
