package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/kcd-project/kcd/daemon/client"
	"github.com/kcd-project/kcd/daemon/config"
	"github.com/kcd-project/kcd/daemon/restapi"
	"github.com/kcd-project/kcd/daemon/store/remotestore"
	"github.com/kcd-project/kcd/raft"
	"github.com/kcd-project/kcd/raft/transport"
)

// raftCluster is restapi.Cluster over the node's Raft member.
type raftCluster struct {
	n *raft.Node
	// drain moves a member's units away before its removal and returns
	// what to do once it is removed (nil: no draining).
	drain func(ctx context.Context, id uint64) (func(), error)
}

func (c raftCluster) Info(context.Context) (restapi.ClusterInfo, error) {
	st := c.n.Status()
	recs := memberRecords(c.n)
	info := restapi.ClusterInfo{ClusterID: st.ClusterID, Self: st.ID, Leader: st.Leader, Term: st.Term, CommitIndex: st.CommitIndex, ReachabilityFrom: st.ID}
	for _, m := range st.Members {
		mi := restapi.MemberInfo{ID: m.ID, RESTURL: m.RESTURL, PeerURL: m.PeerURL, Roles: m.Roles, Raft: m.Raft}
		mi.Reachability = reachability(st, m)
		mi.Reachable = mi.Reachability == restapi.Reachable
		if rec, ok := recs[m.ID]; ok {
			mi.RESTURL, mi.Roles = rec.RESTURL, rec.Roles
		}
		if mi.Roles == nil {
			mi.Roles = []string{}
		}
		if !m.LastContact.IsZero() {
			ms := time.Since(m.LastContact).Milliseconds()
			mi.LastContactMS = &ms
		}
		info.Members = append(info.Members, mi)
	}
	for _, a := range c.n.Alarms() {
		info.Alarms = append(info.Alarms, restapi.CorruptionAlarm{Member: a.Member, Index: a.Index, Revision: a.Revision, Message: a.String()})
		info.Health.Alarms = append(info.Health.Alarms, "corruption: "+a.String())
	}
	return info, nil
}

// reachability is what this node can tell of member m: a leader talks to
// every member, a follower only to the leader (so the others are unknown
// to it), and a node without a leader campaigns, talking to every voter.
func reachability(st raft.Status, m raft.MemberStatus) string {
	switch {
	case m.ID == st.ID:
		return restapi.Reachable
	case m.Reachable:
		if st.Leader == st.ID || m.ID == st.Leader || st.Leader == 0 {
			return restapi.Reachable
		}
	case st.Leader == st.ID || m.ID == st.Leader || (st.Leader == 0 && m.Raft == "voter"):
		return restapi.Unreachable
	}
	return restapi.Unknown
}

func (c raftCluster) AddMember(ctx context.Context, m restapi.NewMember) error {
	if err := checkJoinToken(c.n, m.JoinToken); err != nil {
		return err
	}
	if _, err := raft.NormalizePeerURL(m.PeerURL); err != nil {
		return restapi.Errorf(http.StatusBadRequest, "%v", err)
	}
	peer, _ := raft.NormalizePeerURL(m.PeerURL)
	for _, existing := range c.n.Status().Members {
		if existing.ID == m.ID {
			if existing.PeerURL == peer {
				return nil // a joiner that retries after a lost answer
			}
			return restapi.Errorf(http.StatusConflict, "member %d already exists with peer URL %s", m.ID, existing.PeerURL)
		}
	}
	err := c.n.AddLearner(ctx, raft.Member{ID: m.ID, PeerURL: peer, RESTURL: m.RESTURL, Roles: m.Roles})
	return clusterError(err)
}

// RemoveMember drains the member's worker first (its tasks stop and commit
// their offsets while the store takes them), then removes it from the Raft
// configuration; the removed node then stops.
func (c raftCluster) RemoveMember(ctx context.Context, id uint64) error {
	role, voters := "", 0
	for _, m := range c.n.Status().Members {
		if m.ID == id {
			role = m.Raft
		}
		if m.Raft == "voter" {
			voters++
		}
	}
	// Drain only a member raft will remove: not an unknown id, not the last
	// voter (raft's refusal then says why).
	if c.drain != nil && role != "" && !(role == "voter" && voters == 1) {
		done, err := c.drain(ctx, id)
		if err != nil {
			return clusterError(err)
		}
		defer done()
	}
	return clusterError(c.n.RemoveMember(ctx, id))
}

func (c raftCluster) TransferLeader(ctx context.Context, to uint64) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := c.n.TransferLeadership(ctx, to); err != nil {
		return 0, clusterError(err)
	}
	return c.n.Leader(), nil
}

func (c raftCluster) Leader() (bool, string) {
	lead := c.n.Leader()
	if lead == c.n.ID() {
		return true, ""
	}
	if lead == 0 {
		return false, ""
	}
	if rec, ok := memberRecords(c.n)[lead]; ok && rec.RESTURL != "" {
		return false, rec.RESTURL
	}
	for _, m := range c.n.Status().Members {
		if m.ID == lead {
			return false, m.RESTURL
		}
	}
	return false, ""
}

func clusterError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, raft.ErrLearnerBehind):
		return restapi.Errorf(http.StatusConflict, "%v", err)
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrNoLeader):
		return restapi.Errorf(http.StatusServiceUnavailable, "%v; retry", err)
	case strings.Contains(err.Error(), "no member"):
		return restapi.Errorf(http.StatusNotFound, "%v", err)
	case strings.Contains(err.Error(), "already exists"), strings.Contains(err.Error(), "never reused"), strings.Contains(err.Error(), "last voter"),
		strings.Contains(err.Error(), "is not a voter"), strings.Contains(err.Error(), "is not a learner"),
		strings.Contains(err.Error(), "corruption alarm"), strings.Contains(err.Error(), "no other voter"):
		return restapi.Errorf(http.StatusConflict, "%v", err)
	}
	return err
}

// seedCluster is restapi.Cluster of a worker-only node: it asks the Raft
// nodes its store knows, best ranked first.
type seedCluster struct {
	rs *remotestore.Store
}

func (c seedCluster) Info(ctx context.Context) (restapi.ClusterInfo, error) {
	info, err := c.rs.ClusterInfo(ctx)
	if err != nil {
		return restapi.ClusterInfo{}, restapi.Errorf(http.StatusServiceUnavailable, "no Raft node answered: %v", err)
	}
	return info, nil
}

func (c seedCluster) AddMember(context.Context, restapi.NewMember) error { return errWorkerOnly }
func (c seedCluster) RemoveMember(context.Context, uint64) error         { return errWorkerOnly }
func (c seedCluster) TransferLeader(context.Context, uint64) (uint64, error) {
	return 0, errWorkerOnly
}

// Leader sends leader-only requests on to the best-ranked Raft node, which
// forwards them to the leader in turn.
func (c seedCluster) Leader() (bool, string) { return false, c.rs.Endpoints()[0] }

var errWorkerOnly = restapi.Errorf(http.StatusServiceUnavailable, "this node is worker-only; send cluster changes to a raft node")

// staleReadMax turns the stale-read-max setting into raftstore's option,
// where 0 means the default and a negative value none.
func staleReadMax(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}

// advertise turns a listen address into one others can reach: an
// unspecified host becomes the host name.
func advertise(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		if h, err := os.Hostname(); err == nil {
			host = h
		}
	}
	return net.JoinHostPort(host, port)
}

// startRaft starts the node's Raft member: it bootstraps, joins or restarts
// the cluster, and serves peer traffic on peer-addr.
func (n *Node) startRaft(ctx context.Context) error {
	cfg := n.cfg
	ln, err := net.Listen("tcp", cfg.PeerAddr)
	if err != nil {
		return fmt.Errorf("listen on peer-addr %s: %w", cfg.PeerAddr, err)
	}
	defer func() {
		if n.raft == nil {
			ln.Close()
		}
	}()
	scheme := "http://"
	if cfg.PeerTLS() {
		scheme = "https://"
	}
	self := raft.Member{
		ID:      cfg.NodeID,
		PeerURL: scheme + advertise(ln.Addr().String()),
		RESTURL: n.restScheme() + advertise(n.ln.Addr().String()),
		Roles:   cfg.Roles,
	}
	dir := n.dir.sub("raft")
	rc := raft.Config{
		ID:              cfg.NodeID,
		Dir:             dir,
		Self:            self,
		TickInterval:    cfg.ElectionTimeout / raft.DefaultElectionTicks,
		ElectionTicks:   raft.DefaultElectionTicks,
		HeartbeatTicks:  raft.DefaultHeartbeatTicks,
		SnapshotEntries: cfg.SnapshotEntries,
		SnapshotCatchUp: max(cfg.SnapshotEntries/2, 1),
		Logger:          n.log,

		CorruptionCheckInterval: cfg.CorruptionCheckInterval,
	}
	if cfg.PeerTLS() {
		if rc.ServerTLS, rc.ClientTLS, err = peerTLS(cfg.PeerTLSCert, cfg.PeerTLSKey, cfg.PeerTLSCA); err != nil {
			return err
		}
	}
	_, statErr := os.Stat(filepath.Join(dir, "identity.json"))
	existing := statErr == nil
	switch {
	case cfg.InitialCluster != "":
		members, err := raft.ParseInitialCluster(cfg.InitialCluster)
		if err != nil {
			return err
		}
		if cfg.PeerTLS() {
			for i := range members {
				members[i].PeerURL = strings.Replace(members[i].PeerURL, "http://", "https://", 1)
			}
		}
		for i, m := range members {
			if m.ID == cfg.NodeID {
				self.PeerURL = m.PeerURL // what the others were told
				members[i] = self
			}
		}
		rc.Self, rc.InitialCluster = self, members
	case cfg.Join != "" && !existing:
		info, err := n.joinCluster(ctx, self)
		if err != nil {
			return err
		}
		rc.Join, rc.ClusterID = true, info.ClusterID
		for _, m := range info.Members {
			rc.JoinPeers = append(rc.JoinPeers, raft.Member{ID: m.ID, PeerURL: m.PeerURL, RESTURL: m.RESTURL, Roles: m.Roles})
		}
	case cfg.Join != "":
		// Restarting a node that joined once: its data dir decides, but it
		// must belong to the cluster it is told to join.
		ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
		info, err := n.joinClient().ClusterInfo(ictx)
		cancel()
		if err != nil {
			n.log.Warn("cannot reach the cluster to join to check its id; starting from the data dir", "join", cfg.Join, "err", err)
		} else {
			rc.ClusterID = info.ClusterID
		}
	case !existing:
		// Nothing said: a cluster of this node alone, which others can join.
		rc.InitialCluster = []raft.Member{self}
	}

	r, err := raft.Start(rc)
	if err != nil {
		return err
	}
	n.raft = r
	mux := http.NewServeMux()
	mux.Handle("/raft/", r.Transport().Handler())
	n.peer = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	if t, ok := r.Transport().(*transport.HTTP); ok {
		t.ConfigureServer(n.peer)
	}
	n.wg.Add(2)
	go func() {
		defer n.wg.Done()
		serve := func() error { return n.peer.Serve(ln) }
		if n.peer.TLSConfig != nil {
			// The certificates are in TLSConfig already.
			serve = func() error { return n.peer.ServeTLS(ln, "", "") }
		}
		if err := serve(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.log.Error("peer server stopped", "err", err)
		}
	}()
	go func() {
		defer n.wg.Done()
		n.promoteLearners(ctx)
	}()
	return nil
}

// joinCluster asks a member of a running cluster to add this node, and
// returns the cluster as it was then.
func (n *Node) joinCluster(ctx context.Context, self raft.Member) (restapi.ClusterInfo, error) {
	c := n.joinClient()
	req := restapi.NewMember{ID: self.ID, PeerURL: self.PeerURL, RESTURL: self.RESTURL, Roles: self.Roles, JoinToken: n.joinToken}
	var lastErr error
	for attempt := 0; attempt < 30; attempt++ {
		info, err := c.AddMember(ctx, req)
		if err == nil {
			n.log.Info("joined the cluster as a learner", "cluster_id", info.ClusterID, "via", n.cfg.Join)
			return info, nil
		}
		lastErr = err
		var apiErr *client.APIError
		if errors.As(err, &apiErr) && apiErr.Status < 500 {
			break // refused: retrying will not help
		}
		select {
		case <-ctx.Done():
			return restapi.ClusterInfo{}, ctx.Err()
		case <-time.After(time.Second):
		}
	}
	return restapi.ClusterInfo{}, fmt.Errorf("join the cluster via %s: %w", n.cfg.Join, lastErr)
}

// joinClient is a client of the member at --join, over the node's TLS.
func (n *Node) joinClient() *client.Client {
	return client.NewWithOptions(n.cfg.Join, client.Options{Transport: n.nodeTransport()})
}

// promoteLearners runs on every Raft member; whichever is leader promotes
// the learners that have the raft role once they have caught up.
func (n *Node) promoteLearners(ctx context.Context) {
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.raft.Done():
			return
		case <-tick.C:
		}
		if !n.raft.IsLeader() {
			continue
		}
		for _, m := range n.raft.Status().Members {
			if m.Raft != "learner" || !slices.Contains(m.Roles, config.RoleRaft) {
				continue
			}
			pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err := n.raft.PromoteLearner(pctx, m.ID)
			cancel()
			switch {
			case err == nil:
				n.log.Info("promoted learner to voter", "member", m.ID)
			case !errors.Is(err, raft.ErrLearnerBehind):
				n.log.Warn("promote learner", "member", m.ID, "err", err)
			}
		}
	}
}
