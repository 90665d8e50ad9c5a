// Package restapi serves kcd's HTTP API: Kafka Connect's REST API, with its
// paths, bodies, status codes and error shape, and kcd's own endpoints under
// /kcd/v1/.
package restapi

import (
	"log/slog"
	"maps"
	"net/http"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	kcdapi "github.com/kcd-project/kcd/api"
	"github.com/kcd-project/kcd/daemon/herder"
	"github.com/kcd-project/kcd/daemon/restauth"
	"github.com/kcd-project/kcd/internal/version"
	"github.com/kcd-project/kcd/store"
)

// ConnectAPIVersion is the Kafka Connect version whose REST API kcd speaks. It
// is what GET / reports as "version", so tools that pick features by the
// Connect version they talk to (kcctl, UIs) use the current API. kcd's own
// version is at GET /kcd/v1/version.
const ConnectAPIVersion = "4.4.0"

// Node is what the API needs to know about the node it serves.
type Node interface {
	// KafkaClusterID returns the id of the data plane's Kafka cluster, or
	// false while it is not known yet.
	KafkaClusterID() (string, bool)
	// Ready tells whether the node has completed startup.
	Ready() bool
}

// The bodies of GET /, GET /health and GET /kcd/v1/version.
type (
	ServerInfo   = kcdapi.ServerInfo
	WorkerStatus = kcdapi.WorkerStatus
	VersionInfo  = kcdapi.VersionInfo
)

// Kafka Connect's health messages, kept identical so health checks written
// for it keep working.
const (
	healthyMessage  = "Worker has completed startup and is ready to handle requests."
	startingMessage = "Worker is still starting up."
)

type route struct {
	method, pattern string
	handle          func(*http.Request) (int, any, *Error)
}

// Options are the parts of the node the API serves besides Node.
type Options struct {
	// Cluster serves /kcd/v1/cluster; nil answers 503 there.
	Cluster Cluster
	// Store serves /kcd/v1/store; nil answers 503 there.
	Store store.Store
	// PeerStore serves the store protocol that other nodes' remote stores
	// speak (POST /kcd/v1/store/get, ...); nil: Store. A Raft node that
	// reaches the active backend through the leader refuses there, so
	// that remote stores go to the leader and requests never circle.
	PeerStore store.Store
	// Connect serves Kafka Connect's connector endpoints (/connectors,
	// /connector-plugins); nil answers 503 there.
	Connect *herder.Herder
	// Coordinator serves the coordinator's leader-only endpoints (worker
	// heartbeats, rebalance plans); nil on nodes that are not Raft members.
	Coordinator Coordinator
	// StoreAdmin serves /kcd/v1/store/switch and /status on Raft nodes;
	// nil elsewhere (the requests go to the leader).
	StoreAdmin StoreAdmin
	// Importer serves /kcd/v1/imports on Raft nodes; nil elsewhere (the
	// requests go to the leader).
	Importer Importer
	// Worker serves GET /kcd/v1/worker; nil on nodes without a worker.
	Worker LocalWorker
	// Loggers serves /admin/loggers (loggers.go); nil answers 503 there.
	Loggers Loggers
	// Metrics serves GET /metrics (metrics.go); nil answers 503 there.
	Metrics http.Handler
	// HealthChecks are checked by GET /health after the node's readiness
	// (health.go); each reports one part of the node.
	HealthChecks []HealthCheck
	// Hosts are the Host headers the API answers to; zero: any.
	Hosts HostPolicy
	// Auth authenticates callers, and each route then needs a role
	// (auth.go); nil: the API is open.
	Auth *restauth.Authenticator
	// NodeClient sends the calls this node makes to other nodes (forwarding
	// to the leader, asking it for its view); it authenticates as the node.
	// Nil: a plain client with a 90 s timeout.
	NodeClient *http.Client
	// LeaderWait is how long a leader-only request waits for a leader to be
	// elected before it fails (default 5 s).
	LeaderWait time.Duration
	Logger     *slog.Logger
}

// NewHandler returns the HTTP handler of the API for node.
func NewHandler(node Node, opts Options) http.Handler {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.LeaderWait <= 0 {
		opts.LeaderWait = 5 * time.Second
	}
	a := &api{
		node: node, cluster: opts.Cluster, store: opts.Store, connect: opts.Connect, coord: opts.Coordinator, storeAdmin: opts.StoreAdmin, importer: opts.Importer, peerStore: opts.PeerStore, worker: opts.Worker, loggers: opts.Loggers, metrics: opts.Metrics, log: opts.Logger, leaderWait: opts.LeaderWait,
		forwardClient: opts.NodeClient,
		healthChecks:  append([]HealthCheck{readyCheck(node)}, opts.HealthChecks...),
	}
	if a.peerStore == nil {
		a.peerStore = a.store
	}
	if a.forwardClient == nil {
		a.forwardClient = &http.Client{Timeout: 90 * time.Second}
	}
	if al, ok := node.(Alarmed); ok {
		a.healthChecks = append([]HealthCheck{alarmCheck(al)}, a.healthChecks...)
	}
	routes := a.routes()

	mux := http.NewServeMux()
	// known answers 405 for a path that exists with another method; anything
	// else that no route takes is a 404. Both in Kafka Connect's error shape.
	known := http.NewServeMux()
	seen := map[string]bool{}
	for _, rt := range routes {
		if rt.method == http.MethodGet && staleRoutes[rt.pattern] {
			rt.handle = mayBeStale(rt.handle) // stale.go
		}
		mux.Handle(rt.method+" "+rt.pattern, a.wrap(rt.handle))
		seen[rt.method+" "+rt.pattern] = true
		if !seen[rt.pattern] {
			seen[rt.pattern] = true
			known.Handle(rt.pattern, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				writeError(w, jaxrsError(http.StatusMethodNotAllowed))
			}))
		}
	}
	// A route ending in {x...} also matches its parent with a slash, and
	// ServeMux redirects "M /parent" there; canonicalPaths strips that
	// slash, so the redirect would point at itself. The parent answers
	// 405 instead when no route of that method takes it.
	for _, rt := range routes {
		i := strings.LastIndex(rt.pattern, "/{")
		if i <= 0 || !strings.HasSuffix(rt.pattern, "...}") {
			continue
		}
		parent := rt.method + " " + rt.pattern[:i]
		if !seen[parent] {
			seen[parent] = true
			mux.Handle(parent, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				writeError(w, jaxrsError(http.StatusMethodNotAllowed))
			}))
		}
	}
	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h, p := known.Handler(r); p != "" {
			h.ServeHTTP(w, r)
			return
		}
		writeError(w, jaxrsError(http.StatusNotFound))
	}))
	h := jsonOnly(acceptsJSON(mux, mux))
	if opts.Auth != nil {
		h = authorize(opts.Auth, mux, opts.Logger, h)
	}
	h = canonicalPaths(h)
	if opts.Hosts.Loopback || len(opts.Hosts.Names) > 0 {
		h = checkHost(opts.Hosts, h)
	}
	return a.recoverPanics(h)
}

// routes are every route of the API; each needs a role in routeRoles
// (auth.go).
func (a *api) routes() []route {
	routes := []route{
		{"GET", "/{$}", a.serverInfo},
		{"GET", "/health", a.health},
		{"GET", "/kcd/v1/version", a.version},
		{"GET", "/kcd/v1/cluster", a.withCluster(a.clusterInfo)},
		{"POST", "/kcd/v1/cluster/members", a.withCluster(a.leaderOnly(a.addMember))},
		{"DELETE", "/kcd/v1/cluster/members/{id}", a.withCluster(a.leaderOnly(a.removeMember))},
		{"POST", "/kcd/v1/cluster/leader", a.withCluster(a.leaderOnly(a.transferLeader))},
		{"GET", "/kcd/v1/store/keys", a.listKeys},
		{"GET", "/kcd/v1/store/keys/{key...}", a.getKey},
		{"PUT", "/kcd/v1/store/keys/{key...}", a.putKey},
		{"DELETE", "/kcd/v1/store/keys/{key...}", a.deleteKey},

		// Kafka Connect's connector API (connectors.go, connector_state.go,
		// offsets.go, topics.go, plugins.go).
		{"GET", "/connectors", a.withConnect(a.listConnectors)},
		{"POST", "/connectors", a.withConnect(a.createConnector)},
		{"GET", "/connectors/{name}", a.withConnect(a.getConnector)},
		{"DELETE", "/connectors/{name}", a.withConnect(a.deleteConnector)},
		{"GET", "/connectors/{name}/config", a.withConnect(a.getConfig)},
		{"PUT", "/connectors/{name}/config", a.withConnect(a.putConfig)},
		{"PATCH", "/connectors/{name}/config", a.withConnect(a.patchConfig)},
		{"GET", "/connectors/{name}/status", a.withConnect(a.connectorStatus)},
		{"GET", "/connectors/{name}/tasks", a.withConnect(a.listTasks)},
		{"GET", "/connectors/{name}/tasks/{task}/status", a.withConnect(a.taskStatus)},
		{"POST", "/connectors/{name}/tasks/{task}/restart", a.withConnect(a.restartTask)},
		{"POST", "/connectors/{name}/restart", a.withConnect(a.restartConnector)},
		{"PUT", "/connectors/{name}/pause", a.withConnect(a.pauseConnector)},
		{"PUT", "/connectors/{name}/resume", a.withConnect(a.resumeConnector)},
		{"PUT", "/connectors/{name}/stop", a.withConnect(a.stopConnector)},
		{"GET", "/connectors/{name}/offsets", a.withConnect(a.getOffsets)},
		{"PATCH", "/connectors/{name}/offsets", a.withConnect(a.alterOffsets)},
		{"DELETE", "/connectors/{name}/offsets", a.withConnect(a.resetOffsets)},
		{"GET", "/connectors/{name}/topics", a.withConnect(a.getTopics)},
		{"PUT", "/connectors/{name}/topics/reset", a.withConnect(a.resetTopics)},
		{"GET", "/connector-plugins", a.withConnect(a.listPlugins)},
		{"GET", "/connector-plugins/{plugin}/config", a.withConnect(a.pluginConfig)},
		{"PUT", "/connector-plugins/{plugin}/config/validate", a.withConnect(a.validateConfig)},
	}

	routes = append(routes, a.storeRoutes()...)
	routes = append(routes, a.storeAdminRoutes()...) // the store API (store_api.go)
	routes = append(routes, a.workerRoutes()...)     // workers, assignments, rebalances, events (workers.go, events.go)
	routes = append(routes, a.importRoutes()...)     // imports and export (imports.go)
	routes = append(routes, a.loggerRoutes()...)     // /admin/loggers (loggers.go)
	routes = append(routes, a.metricsRoutes()...)    // /metrics (metrics.go)
	return routes
}

type api struct {
	node          Node
	cluster       Cluster
	store         store.Store
	connect       *herder.Herder
	coord         Coordinator
	storeAdmin    StoreAdmin
	importer      Importer
	peerStore     store.Store
	worker        LocalWorker
	loggers       Loggers
	metrics       http.Handler
	log           *slog.Logger
	leaderWait    time.Duration
	forwardClient *http.Client
	healthChecks  []HealthCheck
}

func (a *api) withCluster(fn func(*http.Request) (int, any, *Error)) func(*http.Request) (int, any, *Error) {
	return func(r *http.Request) (int, any, *Error) {
		if a.cluster == nil {
			return 0, nil, Errorf(http.StatusServiceUnavailable, "this node is not part of a cluster yet")
		}
		return fn(r)
	}
}

// wrap turns a route's function into a handler that writes its result or its
// error, and logs the request.
func (a *api) wrap(fn func(*http.Request) (int, any, *Error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		status, body, err := fn(r)
		if rh, ok := body.(withHeader); ok {
			maps.Copy(w.Header(), rh.header)
			body = rh.body
		}
		if sb, ok := body.(streamBody); ok && err == nil {
			sb(w, r) // a watch stream writes itself
		} else if fw, ok := body.(forwarded); ok && err == nil {
			fw.relay(w, a.log.Warn)
		} else if err != nil {
			status = err.Status
			writeError(w, err)
		} else if body == nil {
			w.WriteHeader(status)
		} else {
			writeJSON(w, status, body)
		}
		a.log.Debug("rest request", "method", r.Method, "path", r.URL.Path, "status", status, "user", requestUser(r), "took", time.Since(start))
		a.auditWrite(r, status)
	})
}

func (a *api) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				a.log.Error("rest handler panicked", "method", r.Method, "path", r.URL.Path, "panic", v, "stack", string(debug.Stack()))
				writeError(w, Errorf(http.StatusInternalServerError, "internal error: %v", v))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

func (a *api) serverInfo(*http.Request) (int, any, *Error) {
	id, ok := a.node.KafkaClusterID()
	if !ok {
		return 0, nil, Errorf(http.StatusServiceUnavailable, "kcd is starting: the Kafka cluster id is not known yet")
	}
	return http.StatusOK, ServerInfo{Version: ConnectAPIVersion, Commit: version.Commit, KafkaClusterID: id}, nil
}

// Alarmed is implemented by a node that can find its own state corrupt.
type Alarmed interface {
	// Alarm returns why the node must not serve, or nil.
	Alarm() error
}

// alarmCheck fails while the node has raised a corruption alarm on itself.
func alarmCheck(al Alarmed) HealthCheck {
	return func() *HealthProblem {
		if err := al.Alarm(); err != nil {
			return &HealthProblem{Message: err.Error()}
		}
		return nil
	}
}

func (a *api) version(*http.Request) (int, any, *Error) {
	return http.StatusOK, VersionInfo{
		Version:           version.Version,
		Commit:            version.Commit,
		GoVersion:         runtime.Version(),
		ConnectAPIVersion: ConnectAPIVersion,
	}, nil
}
