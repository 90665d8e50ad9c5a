package restapi

import (
	"net/http"
)

// metricsRoutes serve GET /metrics, the node's metrics in Prometheus's
// text format (daemon/metrics), behind the same authentication as the
// other read endpoints.
func (a *api) metricsRoutes() []route {
	return []route{{"GET", "/metrics", a.serveMetrics}}
}

func (a *api) serveMetrics(*http.Request) (int, any, *Error) {
	if a.metrics == nil {
		return 0, nil, Errorf(http.StatusServiceUnavailable, "this node serves no metrics")
	}
	return http.StatusOK, streamBody(a.metrics.ServeHTTP), nil
}
