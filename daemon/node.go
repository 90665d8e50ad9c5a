// Package daemon is the kcd node: it wires the data directory, the data
// plane's Kafka client and the REST API together and runs them for the
// node's lifetime.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcd-project/kcd/daemon/clientcfg"
	"github.com/kcd-project/kcd/daemon/config"
	"github.com/kcd-project/kcd/daemon/connect"
	"github.com/kcd-project/kcd/daemon/connect/converter"
	_ "github.com/kcd-project/kcd/daemon/connectors/all" // the built-in connectors
	"github.com/kcd-project/kcd/daemon/connectstore"
	"github.com/kcd-project/kcd/daemon/coordinator"
	"github.com/kcd-project/kcd/daemon/devkafka"
	"github.com/kcd-project/kcd/daemon/herder"
	"github.com/kcd-project/kcd/daemon/importer"
	"github.com/kcd-project/kcd/daemon/javahost"
	"github.com/kcd-project/kcd/daemon/loglevels"
	"github.com/kcd-project/kcd/daemon/metrics"
	"github.com/kcd-project/kcd/daemon/restapi"
	"github.com/kcd-project/kcd/daemon/secrets"
	"github.com/kcd-project/kcd/daemon/store/activestore"
	_ "github.com/kcd-project/kcd/daemon/store/sqlstore" // the mysql and postgres backends
	"github.com/kcd-project/kcd/daemon/worker"
	"github.com/kcd-project/kcd/raft"
	"github.com/kcd-project/kcd/raft/raftstore"
	"github.com/kcd-project/kcd/store"
)

// Node is one running kcd process.
type Node struct {
	cfg config.Config
	log *slog.Logger
	// levels are the log levels of the node's loggers (loggers.go).
	levels *loglevels.Levels

	dir *dataDir
	// javaHost runs the node's Java plugins (nil without a plugin path);
	// unregister removes its provider from daemon/connect's registry.
	javaHost   *javahost.Host
	unregister func()
	broker     *devkafka.Broker
	kafka      *kgo.Client
	rest       *http.Server
	// cancelRequests ends the requests in flight (see Start).
	cancelRequests context.CancelFunc
	ln             net.Listener
	raft           *raft.Node
	store          store.Store // the active store on Raft nodes, a remote one elsewhere
	raftStore      *raftstore.Store
	active         *activestore.Store
	peer           *http.Server

	worker       *worker.Worker
	workerCancel context.CancelFunc
	workerDone   chan struct{}
	member       *coordinator.Member
	coord        *coordinator.Coordinator // on Raft nodes
	memberCancel context.CancelFunc
	memberDone   chan struct{}

	cancel context.CancelFunc
	wg     sync.WaitGroup
	killed bool // Kill ran: Close has nothing left to do

	mu        sync.Mutex
	clusterID string

	joinToken  string // configured join token ("" none); never logged
	nodeSecret []byte // the cluster's node secret (nil none); never logged

	restTLS restTLS // resttls.go

	// files confines the file connectors (--file-connector-dirs; filedirs.go).
	files *connect.Files
	// configKeys encrypt connector and task configs at rest (nil: plain).
	configKeys *connectstore.Keyring
	// storeTimer times the store's operations for GET /metrics.
	storeTimer *metrics.StoreTimer
}

// New returns a node for cfg; it does nothing until Start.
func New(cfg config.Config, log *slog.Logger) *Node {
	if log == nil {
		log = slog.Default()
	}
	log, levels := levelsOf(log, cfg.LogLevel)
	return &Node{cfg: cfg, log: log, levels: levels}
}

// Start opens the data dir, starts the dev broker when asked, connects to
// Kafka and serves the REST API. It returns once the REST API listens; the
// node becomes ready when it has reached Kafka.
func (n *Node) Start(ctx context.Context) (err error) {
	defer func() {
		if err != nil {
			n.closeResources()
		}
	}()
	if n.dir, err = openDataDir(n.cfg.DataDir); err != nil {
		return err
	}
	if n.files, err = n.fileConfinement(); err != nil {
		return err
	}
	n.startJavaHost()
	if n.cfg.ConfigEncryptionKeyFile != "" {
		if n.configKeys, err = connectstore.LoadKeyring(n.cfg.ConfigEncryptionKeyFile); err != nil {
			return err
		}
		n.log.Info("connector configs are encrypted at rest", "key_ids", n.configKeys.IDs())
	}
	seeds := n.cfg.BootstrapServers
	if n.cfg.DevKafka {
		if n.broker, err = devkafka.Start(n.dir.sub("dev-kafka"), n.cfg.DevKafkaPort, n.log); err != nil {
			return err
		}
		seeds = n.broker.Addrs()
	}
	if n.kafka, err = kgo.NewClient(kgo.SeedBrokers(seeds...)); err != nil {
		return fmt.Errorf("kafka client: %w", err)
	}
	if err = n.loadRESTTLS(); err != nil {
		return err
	}
	if n.ln, err = net.Listen("tcp", n.cfg.RESTAddr); err != nil {
		return fmt.Errorf("listen on rest-addr %s: %w", n.cfg.RESTAddr, err)
	}
	ctx, n.cancel = context.WithCancel(context.WithoutCancel(ctx))
	auth, err := n.startRESTAuth(ctx) // restauth.go
	if err != nil {
		return err
	}
	opts := restapi.Options{Logger: n.log.With("subsys", "rest"), Hosts: restapi.HostPolicyFor(n.cfg.RESTAllowedHosts, n.cfg.RESTAddr), NodeClient: n.nodeClient(90 * time.Second), Auth: auth}
	n.storeTimer = metrics.NewStoreTimer()
	if n.cfg.HasRole(config.RoleRaft) {
		if n.joinToken, err = n.configuredJoinToken(); err != nil {
			return err
		}
		if err := n.startRaft(ctx); err != nil {
			return err
		}
		n.raftStore = raftstore.NewWithOptions(n.raft, raftstore.Options{StaleReadMax: staleReadMax(n.cfg.StaleReadMax)})
		n.active = activestore.New(activestore.Config{
			Raft: n.raft, RaftStore: n.raftStore, Remote: n.leaderStore,
			Resolve: store.ResolveSettings, Mask: store.MaskSettings,
			Logger: n.log,
		})
		n.store = connectstore.Seal(metrics.TimeStore(n.active, n.storeTimer), n.configKeys)
		opts.Cluster, opts.Store = raftCluster{n: n.raft, drain: n.drainMember}, guardStore(n.active)
		opts.PeerStore = guardStore(n.active.ForAPI())
		opts.StoreAdmin = storeAdmin{n.active}
		imports := importer.New(importer.Config{Store: n.store, Leader: n.raft, Logger: n.log})
		opts.Importer = importAdmin{imports} // imports.go
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			imports.Run(ctx)
		}()
		opts.Connect = herder.New(connectstore.New(n.store), herder.Options{
			Converters:           converter.Classes(),
			HeaderConverters:     append(converter.Classes(), herder.SimpleHeaderConverter),
			ConverterConfig:      converterConfig,
			Logger:               n.log.With("subsys", "herder"),
			Owners:               n.unitOwners,
			MaxTasksPerConnector: n.cfg.MaxTasksPerConnector,
			NoTopicTracking:      !n.cfg.TopicTrackingEnable,
			NoTopicTrackingReset: !n.cfg.TopicTrackingAllowReset,
			Files:                n.files,
			Clients:              n.herderClients(),
		})
		localWorker := ""
		if n.cfg.HasRole(config.RoleWorker) {
			localWorker = n.workerID()
		}
		coord, err := coordinator.New(coordinator.Config{
			Store: n.store, Raft: n.raft,
			SessionTimeout: n.cfg.SessionTimeout, FenceMargin: n.cfg.FenceMargin,
			RebalanceDelay: n.cfg.RebalanceDelay, LeaderWeightFactor: n.cfg.LeaderWeightFactor,
			LocalWorker: localWorker,
			Logger:      n.log,
		})
		if err != nil {
			return err
		}
		opts.Coordinator = coord
		n.coord = coord
		n.wg.Add(5)
		go func() {
			defer n.wg.Done()
			n.active.Run(ctx)
		}()
		go func() {
			defer n.wg.Done()
			n.bootstrapStore(ctx)
		}()
		go func() {
			defer n.wg.Done()
			n.publishSelf(ctx, n.raft.Self())
		}()
		go func() {
			defer n.wg.Done()
			n.ensureJoinToken(ctx, n.joinToken)
		}()
		go func() {
			defer n.wg.Done()
			coord.Run(ctx)
		}()
		if n.cfg.HasRole(config.RoleWorker) {
			if err := n.startWorker(ctx, seeds, n.raftEndpoints); err != nil {
				return err
			}
			opts.Worker = n
			opts.HealthChecks = append(opts.HealthChecks, n.workerHealth)
		}
	} else if err := n.startRemote(ctx, &opts, seeds); err != nil { // remote.go
		return err
	}
	loggers := &nodeLoggers{levels: n.levels, store: n.store, log: n.log, changed: make(chan struct{})}
	opts.Loggers = loggers
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		loggers.follow(ctx) // loggers.go
	}()
	opts.Metrics = metrics.New(n.metricsSources())
	// Requests run under a context that Close cancels once in-flight ones
	// had a moment to finish: a request waiting for a leader (a removed or
	// cut-off node has none) must not hold the stop for its whole wait.
	var reqCtx context.Context
	reqCtx, n.cancelRequests = context.WithCancel(context.WithoutCancel(ctx))
	var restLn net.Listener
	n.rest, restLn = restapi.NewServer(restapi.NewHandler(n, opts), n.ln, restapi.ServerOptions{
		MaxConnections: n.restMaxConnections(), BaseContext: reqCtx, TLS: n.restServerTLS(), Logger: n.log.With("subsys", "rest"),
	})

	n.wg.Add(2)
	go func() {
		defer n.wg.Done()
		if err := n.rest.Serve(restLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.log.Error("rest server stopped", "err", err)
		}
	}()
	go func() {
		defer n.wg.Done()
		n.discoverKafkaCluster(ctx)
	}()
	n.log.Info("kcd node started", "node_id", n.cfg.NodeID, "roles", n.cfg.Roles, "rest", n.RESTURL(), "data_dir", n.dir.path, "bootstrap_servers", seeds)
	return nil
}

// Run starts the node and serves until ctx is cancelled, then stops cleanly.
// A fatal error of the Raft member stops the node too, and is returned.
func (n *Node) Run(ctx context.Context) error {
	if err := n.Start(ctx); err != nil {
		return err
	}
	var raftDone <-chan struct{}
	if n.raft != nil {
		raftDone = n.raft.Done()
	}
	select {
	case <-ctx.Done():
		n.log.Info("stopping kcd node")
	case <-raftDone:
		n.log.Error("raft member stopped; stopping kcd node", "err", n.raft.Err())
	}
	err := n.Close()
	if n.raft != nil && n.raft.Err() != nil {
		return n.raft.Err()
	}
	return err
}

// workerLimits are the worker's defaults with the node's in-flight limits.
func (n *Node) workerLimits() worker.Limits {
	l := worker.Default().Limits
	l.WorkerInFlightBytes = int64(n.cfg.WorkerInFlightBytes)
	l.WorkerInFlightRecords = n.cfg.WorkerInFlightRecords
	l.TaskInFlightBytes = int64(n.cfg.TaskInFlightBytes)
	l.TaskInFlightRecords = n.cfg.TaskInFlightRecords
	return l
}

// startWorker runs the connectors and tasks the coordinator assigns to
// this node's worker; its member heartbeats the coordinator through
// endpoints (REST base URLs of Raft nodes, any of which forwards to the
// leader).
func (n *Node) startWorker(ctx context.Context, seeds []string, endpoints func() []string) error {
	id := n.workerID()
	member, err := coordinator.NewMember(coordinator.MemberConfig{
		Worker:            coordinator.WorkerInfo{ID: id, RESTURL: n.RESTURL(), NodeID: n.cfg.NodeID, Weight: n.cfg.WorkerWeight, Capacity: n.cfg.WorkerCapacity},
		Store:             n.store,
		Endpoints:         endpoints,
		SessionTimeout:    n.cfg.SessionTimeout,
		HeartbeatInterval: n.cfg.HeartbeatInterval,
		Client:            n.nodeClient(n.cfg.SessionTimeout),
		Logger:            n.log,
	})
	if err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	providers, err := secrets.NewProviders(n.cfg.ConfigProviders, n.cfg.ConfigProviderAllowedPaths)
	if err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	// The node's own secrets are no connector's to read.
	providers.Protect(n.dir.path, n.cfg.File, n.cfg.ConfigEncryptionKeyFile, n.cfg.JoinTokenFile, n.cfg.PeerTLSKey,
		n.cfg.RESTTLSKey, n.cfg.NodeTokenFile, n.cfg.RESTAuthFile)
	w, err := worker.New(worker.Config{
		WorkerID:        id,
		ConfigProviders: providers,
		Store:           connectstore.New(n.store),
		Seeds:           seeds,
		Converters:      func(class string) (worker.Converter, error) { return converter.New(class) },
		Assignment:      member,

		OffsetFlushInterval:  n.cfg.OffsetFlushInterval,
		ExactlyOnceSource:    n.cfg.ExactlyOnceSourceSupport,
		MaxTasksPerConnector: n.cfg.MaxTasksPerConnector,
		Producer:             n.cfg.Producer,
		Consumer:             n.cfg.Consumer,
		OverridePolicy:       clientcfg.Policy(n.cfg.ClientConfigOverridePolicy),
		Files:                n.files,
		Logger:               n.log,
		Limits:               n.workerLimits(),
	})
	if err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	member.SetRunning(func() []coordinator.Unit {
		ids := w.Running()
		out := make([]coordinator.Unit, len(ids))
		for i, t := range ids {
			out[i] = coordinator.Unit{Connector: t.Connector, Task: t.Task}
		}
		return out
	})
	mctx, mcancel := context.WithCancel(ctx)
	wctx, cancel := context.WithCancel(ctx)
	n.worker, n.member, n.workerDone = w, member, make(chan struct{})
	n.workerCancel = func() { cancel() }
	n.memberCancel = mcancel
	n.memberDone = make(chan struct{})
	go func() {
		defer close(n.memberDone)
		member.Run(mctx)
	}()
	go func() {
		defer close(n.workerDone)
		if err := w.Run(wctx); err != nil {
			n.log.Error("worker stopped", "err", err)
		}
	}()
	return nil
}

// herderClients are the workers' client settings, for validate.
func (n *Node) herderClients() *herder.ClientSettings {
	return &herder.ClientSettings{
		Policy:           clientcfg.Policy(n.cfg.ClientConfigOverridePolicy),
		Producer:         n.cfg.Producer,
		Consumer:         n.cfg.Consumer,
		NotTransactional: n.cfg.ExactlyOnceSourceSupport == "disabled",
	}
}

// workerID names this node's worker: its advertised REST host:port.
func (n *Node) workerID() string {
	return strings.TrimPrefix(advertise(n.ln.Addr().String()), "http://")
}

// raftEndpoints are where the worker of a Raft node heartbeats: its own
// REST API first, then the other members' (once its own has stopped).
func (n *Node) raftEndpoints() []string {
	out := []string{n.RESTURL()}
	for id, m := range memberRecords(n.raft) {
		if id != n.cfg.NodeID && m.RESTURL != "" {
			out = append(out, m.RESTURL)
		}
	}
	return out
}

// Raft is the node's Raft member (nil on a worker-only node).
func (n *Node) Raft() *raft.Node { return n.raft }

// Close stops everything the node runs, in reverse order of start. Every
// step is bounded, so that a node without quorum (whose offset commits and
// leave cannot succeed) still stops within seconds.
func (n *Node) Close() error {
	if n.killed {
		return nil
	}
	var err error
	if n.rest != nil {
		ctx, cancel := context.WithTimeout(context.Background(), restStopTimeout)
		grace := time.AfterFunc(time.Second, n.cancelRequests)
		if serr := n.rest.Shutdown(ctx); serr != nil {
			n.log.Warn("rest requests still running at stop; closing their connections", "err", serr)
			_ = n.rest.Close()
		}
		grace.Stop()
		n.cancelRequests()
		cancel()
	}
	if n.worker != nil {
		// Tasks drain and commit their offsets while the store still works;
		// then the worker leaves, so its units move at once.
		n.workerCancel()
		if !n.waitWhileLeader(n.workerDone, workerStopTimeout) {
			n.log.Warn("tasks did not finish committing their offsets in time; stopping without them (is there a quorum?)")
		}
		// Without a leader nothing can be committed: do not wait for it long.
		noLeader := n.raft != nil && n.raft.Leader() == 0
		ctx, cancel := context.WithTimeout(context.Background(), stepTimeout(leaveTimeout, noLeader))
		if n.coord != nil && n.raft.IsLeader() {
			// The coordinator is here, and the REST API already stopped.
			if err := n.coord.Leave(ctx, n.workerID()); err != nil {
				n.member.Leave(ctx)
			}
		} else {
			n.member.Leave(ctx)
		}
		cancel()
		n.memberCancel()
		waitClosed(n.memberDone, time.Second)
	}
	if n.cancel != nil {
		n.cancel()
	}
	if n.raft != nil {
		// A leader hands over leadership first (bounded by an election
		// timeout), so the others need not wait for an election.
		if rerr := n.raft.Stop(); rerr != nil && err == nil {
			err = rerr
		}
	}
	if n.worker != nil && !waitClosed(n.workerDone, time.Second) {
		n.log.Warn("worker still stopping after raft stopped")
	}
	if n.peer != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		if n.peer.Shutdown(ctx) != nil {
			_ = n.peer.Close()
		}
		cancel()
	}
	if !waitGroup(&n.wg, 2*time.Second) {
		n.log.Warn("some of the node's loops did not stop in time; stopping anyway")
	}
	n.closeResources()
	if err != nil {
		return fmt.Errorf("stop: %w", err)
	}
	n.log.Info("kcd node stopped")
	return nil
}

// Kill stops the node at once, as kill -9 would stop its process: the REST
// and peer servers close with their connections, the Raft member halts (no
// leadership transfer), the worker halts (no drain, no offset commit, no
// status, no leave). For tests and benchmarks that run nodes in one
// process; Close is the clean way, and does nothing after Kill.
func (n *Node) Kill() {
	n.killed = true
	if n.rest != nil {
		_ = n.rest.Close()
		n.cancelRequests()
	}
	if n.peer != nil {
		_ = n.peer.Close()
	}
	if n.worker != nil {
		n.memberCancel()
		n.worker.Halt()
	}
	if n.raft != nil {
		n.raft.Halt()
	}
	if n.cancel != nil {
		n.cancel()
	}
	if n.worker != nil {
		waitClosed(n.workerDone, time.Second)
		waitClosed(n.memberDone, time.Second)
	}
	waitGroup(&n.wg, 2*time.Second)
	n.closeResources()
}

// Bounds of the steps of Close. With a leader, offset commits and a leave
// take milliseconds; without one they cannot succeed, and the shorter
// bound of stepTimeout applies.
const (
	restStopTimeout   = 3 * time.Second
	workerStopTimeout = 5 * time.Second
	leaveTimeout      = 3 * time.Second
	noLeaderTimeout   = 500 * time.Millisecond
)

func stepTimeout(d time.Duration, noLeader bool) time.Duration {
	if noLeader {
		return noLeaderTimeout
	}
	return d
}

// waitWhileLeader waits for ch to be closed, at most d, and gives up
// sooner once this Raft member has known no leader for noLeaderTimeout
// (then nothing the wait is for can be committed). It reports whether ch
// was closed.
func (n *Node) waitWhileLeader(ch <-chan struct{}, d time.Duration) bool {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var leaderless time.Time
	for {
		select {
		case <-ch:
			return true
		case <-deadline.C:
			return false
		case now := <-tick.C:
			switch {
			case n.raft == nil || n.raft.Leader() != 0:
				leaderless = time.Time{}
			case leaderless.IsZero():
				leaderless = now
			case now.Sub(leaderless) >= noLeaderTimeout:
				return false
			}
		}
	}
}

// waitClosed waits for ch to be closed, at most d; it reports whether it was.
func waitClosed(ch <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}

// waitGroup waits for wg, at most d; it reports whether it finished.
func waitGroup(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	return waitClosed(done, d)
}

func (n *Node) closeResources() {
	if n.unregister != nil {
		n.unregister()
		n.unregister = nil
	}
	if n.javaHost != nil {
		_ = n.javaHost.Close() // after the worker: its tasks stopped first
	}
	if n.raft != nil {
		n.raft.Halt() // no-op after Stop; after a failed Start it releases the member
	}
	if n.store != nil {
		n.store.Close()
	}
	if n.raftStore != nil {
		n.raftStore.Close()
	}
	if n.ln != nil {
		n.ln.Close() // already closed after a clean Shutdown; closing again is harmless
	}
	if n.kafka != nil {
		n.kafka.Close()
	}
	if n.broker != nil {
		n.broker.Close()
	}
	if n.dir != nil {
		if err := n.dir.close(); err != nil {
			n.log.Warn("release data dir lock", "err", err)
		}
	}
}

// RESTURL is the base URL the REST API is served on, as others reach it
// (an unspecified listen host becomes the host name, which a TLS
// certificate can name); https:// with rest-tls-cert.
func (n *Node) RESTURL() string {
	if n.ln == nil {
		return n.restScheme() + advertise(n.cfg.RESTAddr)
	}
	return n.restScheme() + advertise(n.ln.Addr().String())
}

// KafkaClusterID implements restapi.Node.
func (n *Node) KafkaClusterID() (string, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.clusterID, n.clusterID != ""
}

// Ready implements restapi.Node: the node is ready once it has reached Kafka.
func (n *Node) Ready() bool {
	_, ok := n.KafkaClusterID()
	return ok
}

// Alarm implements restapi.Alarmed: this member's corruption alarm.
func (n *Node) Alarm() error {
	if n.raft == nil {
		return nil
	}
	return n.raft.Corrupt()
}

// discoverKafkaCluster asks the brokers for the cluster id until one answers,
// backing off between tries.
func (n *Node) discoverKafkaCluster(ctx context.Context) {
	adm := kadm.NewClient(n.kafka)
	backoff := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		reqCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		md, err := adm.BrokerMetadata(reqCtx)
		cancel()
		if err == nil && md.Cluster != "" {
			n.mu.Lock()
			n.clusterID = md.Cluster
			n.mu.Unlock()
			n.log.Info("connected to kafka; node is ready", "kafka_cluster_id", md.Cluster, "brokers", len(md.Brokers))
			return
		}
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			err = errors.New("metadata response carries no cluster id")
		}
		lvl := slog.LevelDebug
		if attempt%10 == 1 {
			lvl = slog.LevelWarn
		}
		n.log.Log(ctx, lvl, "kafka not reachable yet; retrying", "attempt", attempt, "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

// startJavaHost makes the node's Java connector host when a plugin path
// is set; the process itself starts on first use.
func (n *Node) startJavaHost() {
	if len(n.cfg.PluginPath) == 0 {
		return
	}
	dir := n.cfg.JavaHostDir
	if dir == "" {
		dir = javahost.DefaultDir()
	}
	n.javaHost = javahost.New(javahost.Options{
		Java: n.cfg.Java, Dir: dir, PluginPath: n.cfg.PluginPath, Heap: n.cfg.JavaHostHeap,
		HangLimit: n.cfg.JavaHostHangLimit, JVMOptions: n.cfg.JavaHostJVMOptions,
		PluginDiscovery: n.cfg.PluginDiscovery, Logger: n.log,
		WorkerConfig: map[string]string{
			"key.converter": worker.JSONConverter, "key.converter.schemas.enable": "true",
			"value.converter": worker.JSONConverter, "value.converter.schemas.enable": "true",
		},
	})
	n.unregister = connect.RegisterProvider(javahost.NewProvider(n.javaHost))
	n.log.Info("java connector host configured; it starts when a connector needs it", "plugin_path", strings.Join(n.cfg.PluginPath, ","), "dir", dir)
}

// metricsSources are the parts of the node GET /metrics reads: those it
// runs (a worker-only node has no Raft member, coordinator or backend).
func (n *Node) metricsSources() metrics.Sources {
	src := metrics.Sources{Store: n.storeTimer}
	if n.worker != nil {
		src.Worker, src.Member = n.worker, n.member
	}
	if n.raft != nil {
		src.Raft = n.raft
	}
	if n.coord != nil {
		src.Coordinator = n.coord
	}
	if n.active != nil {
		src.Backend = n.active
	}
	return src
}
