// Package importer runs kcd's imports (POST /kcd/v1/imports, kcctl
// migrate) on the Raft leader: connectors with their target states, task
// configs and offsets come in at once, all of them or none.
//
// An open import is staged under its own prefix of the metadata store,
// invisible to the cluster:
//
//	kcd/imports/open                      id of the import staging or committing (one at a time)
//	kcd/imports/journal/<id>              journal: state, items, counts, times
//	kcd/imports/data/<id>/c/<n>           connector n of the import (create or overwrite)
//	kcd/imports/data/<id>/o/<n>/<hash>    a staged offset of connector n: its final key and value
//
// The commit is one atomic Batch, conditioned on every connector being as
// the import saw it and on the journal, that writes every connector's
// config with target state STOPPED and marks the journal committed. From
// then on the import is certain: the roll-forward moves each connector's
// staged offsets into place (removing the offsets it had that the import
// does not carry), then sets its task configs and target state and removes
// its staging key in one batch; then the journal is done. Every step is
// conditioned on the staging keys it consumes, so it runs at most once
// however many times it is attempted, and a new leader finishes the
// roll-forward of a committed import (Run).
package importer

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kcd-project/kcd/api"
	"github.com/kcd-project/kcd/daemon/connectstore"
	"github.com/kcd-project/kcd/store"
)

// Kinds of the errors of an Importer (errors.Is).
var (
	ErrInvalid  = errors.New("importer: invalid request")     // 400
	ErrConflict = errors.New("importer: conflict")            // 409
	ErrNotFound = errors.New("importer: no such import")      // 404
	errLost     = errors.New("importer: staging key changed") // another attempt did this step
)

// Error is an error of a kind, with a message for the client.
type Error struct {
	Kind error
	Msg  string
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() error { return e.Kind }

func errorf(kind error, format string, args ...any) error {
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, args...)}
}

// Leader says whether this node leads the Raft group (raft.Node).
type Leader interface {
	IsLeader() bool
	Term() uint64
}

// Config configures an Importer.
type Config struct {
	Store store.Store
	// Leader gates Run's recovery; nil: this node always leads.
	Leader Leader
	// StaleAfter is how long a staging import may go without a request
	// before Run aborts it (default 1 h).
	StaleAfter time.Duration
	// RecoverEvery is how often Run looks for imports to finish or abort
	// (default 10 s), besides at the start of every leadership.
	RecoverEvery time.Duration
	// KeepJournals and KeepFor bound the finished imports kept for GET
	// (default 20, and 7 days).
	KeepJournals int
	KeepFor      time.Duration
	Logger       *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Importer runs imports over a store. Its methods are meant for the Raft
// leader; they serialize on one lock.
type Importer struct {
	cfg Config
	st  store.Store
	cs  *connectstore.Store
	log *slog.Logger

	mu sync.Mutex
	// afterCommit, when set (tests), runs right after the commit batch;
	// an error stops the roll-forward there, as a crash would.
	afterCommit func() error
}

// New returns an Importer over cfg.Store.
func New(cfg Config) *Importer {
	if cfg.StaleAfter <= 0 {
		cfg.StaleAfter = time.Hour
	}
	if cfg.RecoverEvery <= 0 {
		cfg.RecoverEvery = 10 * time.Second
	}
	if cfg.KeepJournals <= 0 {
		cfg.KeepJournals = 20
	}
	if cfg.KeepFor <= 0 {
		cfg.KeepFor = 7 * 24 * time.Hour
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Importer{cfg: cfg, st: cfg.Store, cs: connectstore.New(cfg.Store), log: cfg.Logger.With("subsys", "importer")}
}

// Keys of the staging area.
const (
	prefix        = "kcd/imports/"
	openKey       = prefix + "open"
	journalPrefix = prefix + "journal/"
	dataRoot      = prefix + "data/"
)

func journalKey(id string) string     { return journalPrefix + id }
func dataPrefix(id string) string     { return dataRoot + id + "/" }
func connPrefix(id string) string     { return dataPrefix(id) + "c/" }
func connKey(id string, n int) string { return connPrefix(id) + fmt.Sprintf("%05d", n) }
func offPrefix(id string, n int) string {
	return dataPrefix(id) + "o/" + fmt.Sprintf("%05d", n) + "/"
}

// offKey is where an offset bound for finalKey is staged: one key per
// partition, so that a partition sent twice keeps the later offset.
func offKey(id string, n int, finalKey string) string {
	sum := sha256.Sum256([]byte(finalKey))
	return offPrefix(id, n) + hex.EncodeToString(sum[:16])
}

// journal is an import's record.
type journal struct {
	ID            string           `json:"id"`
	State         string           `json:"state"`
	Items         []api.ImportItem `json:"items"`
	SourceOffsets int64            `json:"source_offsets"`
	SinkOffsets   int64            `json:"sink_offsets"`
	Revision      int64            `json:"revision,omitempty"`
	StartedAt     time.Time        `json:"started_at"`
	ActiveAt      time.Time        `json:"active_at"`
	EndedAt       time.Time        `json:"ended_at,omitzero"`
	Error         string           `json:"error,omitempty"`
}

func (j journal) api() api.Import {
	return api.Import{ID: j.ID, State: j.State, Items: j.Items, SourceOffsets: j.SourceOffsets, SinkOffsets: j.SinkOffsets,
		Revision: j.Revision, StartedAt: j.StartedAt, EndedAt: j.EndedAt, Error: j.Error}
}

// stagedConn is a connector of an import that it creates or overwrites.
type stagedConn struct {
	Name   string              `json:"name"`
	Config map[string]string   `json:"config"`
	Target string              `json:"target"`
	Tasks  []map[string]string `json:"tasks,omitempty"`
	Action string              `json:"action"`
	// ConfigRev is the revision of the config an overwrite replaces.
	ConfigRev int64 `json:"config_rev,omitempty"`
	// Cleared: the connector's offsets that the import does not carry
	// are removed (roll-forward).
	Cleared bool `json:"cleared,omitempty"`
}

// stagedOffset is an offset waiting for the commit: its final key and
// value (connectstore's ops).
type stagedOffset struct {
	Key   string `json:"key"`
	Value []byte `json:"value"`
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("importer: encode %T: %v", v, err)) // plain data only
	}
	return b
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// checkRequest validates an import's connectors, before anything is read.
func checkRequest(req api.ImportRequest) error {
	if len(req.Connectors) == 0 {
		return errorf(ErrInvalid, "an import needs at least one connector")
	}
	if len(req.Connectors) > api.MaxImportConnectors {
		return errorf(ErrInvalid, "an import takes at most %d connectors, this one has %d: split it", api.MaxImportConnectors, len(req.Connectors))
	}
	seen := make(map[string]bool, len(req.Connectors))
	for i, c := range req.Connectors {
		if err := connectstore.CheckName(c.Name); err != nil || c.Name == "" {
			if err == nil {
				err = errors.New("a connector name must not be empty")
			}
			return errorf(ErrInvalid, "connector %d (%q): %v", i, c.Name, err)
		}
		if seen[c.Name] {
			return errorf(ErrInvalid, "connector %q appears twice in the import", c.Name)
		}
		seen[c.Name] = true
		switch c.Target {
		case connectstore.TargetStarted, connectstore.TargetPaused, connectstore.TargetStopped:
		default:
			return errorf(ErrInvalid, "connector %q: target %q is not STARTED, PAUSED or STOPPED", c.Name, c.Target)
		}
		if strings.TrimSpace(c.Config["connector.class"]) == "" {
			return errorf(ErrInvalid, "connector %q: its config has no connector.class", c.Name)
		}
		if err := store.CheckPut(connKey("x", i), mustJSON(stagedConn{Name: c.Name, Config: c.Config, Tasks: c.Tasks})); err != nil {
			return errorf(ErrInvalid, "connector %q: its config and task configs are too large: %v", c.Name, err)
		}
	}
	return nil
}

// Import opens an import of req's connectors (or, for req.DryRun, only
// says what it would do).
func (im *Importer) Import(ctx context.Context, req api.ImportRequest) (api.Import, error) {
	if err := checkRequest(req); err != nil {
		return api.Import{}, err
	}
	im.mu.Lock()
	defer im.mu.Unlock()
	configs, err := im.cs.Configs(ctx)
	if err != nil {
		return api.Import{}, fmt.Errorf("read the connectors: %w", err)
	}
	now := im.cfg.Now().UTC()
	j := journal{ID: newID(), State: api.ImportStaging, StartedAt: now, ActiveAt: now}
	var staged []stagedConn
	var blocked []string
	for _, c := range req.Connectors {
		item := api.ImportItem{Name: c.Name}
		cur, exists := configs[c.Name]
		switch {
		case !exists:
			item.Action = api.ImportCreate
		case maps.Equal(cur.Config, c.Config):
			item.Action, item.Reason = api.ImportUnchanged, "a connector of that name exists with the same config: left alone"
		case !req.Overwrite:
			item.Action, item.Reason = api.ImportExists, "a connector of that name exists with another config: left alone (overwrite replaces it once it is stopped)"
		default:
			stopped, err := im.cs.Stopped(ctx, c.Name)
			if err != nil {
				return api.Import{}, fmt.Errorf("read the state of connector %s: %w", c.Name, err)
			}
			if stopped {
				item.Action = api.ImportOverwrite
			} else {
				item.Action = api.ImportBlocked
				item.Reason = fmt.Sprintf("it is not stopped: stop it first (PUT /connectors/%s/stop) to replace it", c.Name)
				blocked = append(blocked, c.Name)
			}
		}
		if item.Action == api.ImportCreate || item.Action == api.ImportOverwrite {
			staged = append(staged, stagedConn{Name: c.Name, Config: c.Config, Target: c.Target, Tasks: c.Tasks, Action: item.Action, ConfigRev: cur.Rev})
		}
		j.Items = append(j.Items, item)
	}
	if req.DryRun {
		return api.Import{Items: j.Items, StartedAt: now}, nil
	}
	if len(blocked) > 0 {
		return api.Import{}, errorf(ErrConflict, "the import cannot replace %d connector(s) that are not stopped: %s. Stop each first (PUT /connectors/<name>/stop, or kcctl stop), or import without overwrite to leave them alone",
			len(blocked), names(blocked))
	}
	if kv, found, err := im.st.Get(ctx, openKey); err != nil {
		return api.Import{}, err
	} else if found {
		return api.Import{}, im.openConflict(ctx, string(kv.Value))
	}
	ops := []store.Op{store.Put(openKey, []byte(j.ID)), store.Put(journalKey(j.ID), mustJSON(j))}
	n := 0
	for i, item := range j.Items {
		if item.Action == api.ImportCreate || item.Action == api.ImportOverwrite {
			ops = append(ops, store.Put(connKey(j.ID, i), mustJSON(staged[n])))
			n++
		}
	}
	if _, ok, err := im.st.Batch(ctx, []store.Cond{{Key: openKey}, {Key: journalKey(j.ID)}}, ops); err != nil {
		return api.Import{}, fmt.Errorf("open the import: %w", err)
	} else if !ok {
		kv, _, _ := im.st.Get(ctx, openKey)
		return api.Import{}, im.openConflict(ctx, string(kv.Value))
	}
	im.log.Info("import opened", "import", j.ID, "connectors", len(j.Items), "staged", n)
	return j.api(), nil
}

// openConflict is the error of a second import while id is open.
func (im *Importer) openConflict(ctx context.Context, id string) error {
	state := "open"
	if j, _, err := im.journal(ctx, id); err == nil {
		state = j.State
	}
	return errorf(ErrConflict, "import %s is %s: one import at a time; commit it (POST /kcd/v1/imports/%s/commit) or abort it (DELETE /kcd/v1/imports/%s) first", id, state, id, id)
}

// names lists a few names for a message.
func names(ns []string) string {
	const most = 20
	if len(ns) > most {
		return strings.Join(ns[:most], ", ") + fmt.Sprintf(" and %d more", len(ns)-most)
	}
	return strings.Join(ns, ", ")
}

// journal reads an import's journal and its revision.
func (im *Importer) journal(ctx context.Context, id string) (journal, int64, error) {
	if id == "" || strings.ContainsAny(id, "/") || len(id) > 64 {
		return journal{}, 0, errorf(ErrNotFound, "no import %q", id)
	}
	kv, found, err := im.st.Get(ctx, journalKey(id))
	if err != nil {
		return journal{}, 0, err
	}
	if !found {
		return journal{}, 0, errorf(ErrNotFound, "no import %q", id)
	}
	var j journal
	if err := json.Unmarshal(kv.Value, &j); err != nil {
		return journal{}, 0, fmt.Errorf("import %s: bad journal: %w", id, err)
	}
	return j, kv.ModRevision, nil
}

// Get returns an import's state.
func (im *Importer) Get(ctx context.Context, id string) (api.Import, error) {
	j, _, err := im.journal(ctx, id)
	return j.api(), err
}

// List returns the imports kept, the latest first.
func (im *Importer) List(ctx context.Context) ([]api.Import, error) {
	js, err := im.journals(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]api.Import, len(js))
	for i, j := range js {
		out[i] = j.api()
	}
	return out, nil
}

// journals reads every journal, the latest first.
func (im *Importer) journals(ctx context.Context) ([]journal, error) {
	kvs, _, err := im.st.Scan(ctx, journalPrefix, 0)
	if err != nil {
		return nil, err
	}
	out := make([]journal, 0, len(kvs))
	for _, kv := range kvs {
		var j journal
		if err := json.Unmarshal(kv.Value, &j); err != nil {
			return nil, fmt.Errorf("%s: bad journal: %w", kv.Key, err)
		}
		out = append(out, j)
	}
	slices.SortFunc(out, func(a, b journal) int { return b.StartedAt.Compare(a.StartedAt) })
	return out, nil
}

// ImportOffsets stages offsets of an open import.
func (im *Importer) ImportOffsets(ctx context.Context, id string, offs api.ImportOffsets) (api.Import, error) {
	if n := len(offs.Source) + len(offs.Sink); n > api.MaxImportOffsets {
		return api.Import{}, errorf(ErrInvalid, "one request takes at most %d offsets, this one has %d: send them in chunks", api.MaxImportOffsets, n)
	}
	im.mu.Lock()
	defer im.mu.Unlock()
	j, rev, err := im.journal(ctx, id)
	if err != nil {
		return api.Import{}, err
	}
	if j.State != api.ImportStaging {
		return api.Import{}, errorf(ErrConflict, "import %s is %s: it takes no more offsets", id, j.State)
	}
	index := map[string]int{}
	action := map[string]string{}
	for i, it := range j.Items {
		action[it.Name] = it.Action
		if it.Action == api.ImportCreate || it.Action == api.ImportOverwrite {
			index[it.Name] = i
		}
	}
	at := func(name string) (int, error) {
		n, ok := index[name]
		if ok {
			return n, nil
		}
		if a, in := action[name]; in {
			return 0, errorf(ErrInvalid, "connector %q is %s in import %s: only connectors it creates or overwrites take offsets", name, a, id)
		}
		return 0, errorf(ErrInvalid, "connector %q is not part of import %s", name, id)
	}
	// One op per staged key: a partition sent twice keeps the later.
	pos := map[string]int{}
	var ops []store.Op
	var added int64 // new keys of this request
	stage := func(n int, final store.Op) error {
		key := offKey(id, n, final.Key)
		op := store.Put(key, mustJSON(stagedOffset{Key: final.Key, Value: final.Value}))
		if err := store.CheckPut(final.Key, final.Value); err != nil {
			return errorf(ErrInvalid, "%v", err)
		}
		if err := store.CheckPut(op.Key, op.Value); err != nil {
			return errorf(ErrInvalid, "%v", err)
		}
		if i, dup := pos[key]; dup {
			ops[i] = op
			return nil
		}
		pos[key] = len(ops)
		ops = append(ops, op)
		added++
		return nil
	}
	for i, o := range offs.Source {
		n, err := at(o.Connector)
		if err != nil {
			return api.Import{}, err
		}
		if len(o.Partition) == 0 {
			return api.Import{}, errorf(ErrInvalid, "source offset %d of connector %q: the partition cannot be null or empty", i, o.Connector)
		}
		if o.Offset == nil {
			return api.Import{}, errorf(ErrInvalid, "source offset %d of connector %q: the offset cannot be null", i, o.Connector)
		}
		for _, m := range []map[string]any{o.Partition, o.Offset} {
			if err := connectstore.CheckOffsetFormat(m); err != nil {
				return api.Import{}, errorf(ErrInvalid, "source offset %d of connector %q: %v", i, o.Connector, err)
			}
		}
		if o.Key != "" {
			if err := connectstore.CheckOffsetKey(o.Connector, o.Partition, o.Key); err != nil {
				return api.Import{}, errorf(ErrInvalid, "source offset %d of connector %q: %v", i, o.Connector, err)
			}
		}
		op, err := connectstore.SourceOffsetOp(o.Connector, connectstore.SourceOffset{Partition: o.Partition, Offset: o.Offset, Key: o.Key})
		if err != nil {
			return api.Import{}, errorf(ErrInvalid, "source offset %d of connector %q: %v", i, o.Connector, err)
		}
		if err := stage(n, op); err != nil {
			return api.Import{}, err
		}
	}
	sources, added := added, 0
	for i, o := range offs.Sink {
		n, err := at(o.Connector)
		if err != nil {
			return api.Import{}, err
		}
		switch {
		case o.Topic == "":
			return api.Import{}, errorf(ErrInvalid, "sink offset %d of connector %q: Kafka topic names must be valid strings and may not be null", i, o.Connector)
		case o.Partition < 0:
			return api.Import{}, errorf(ErrInvalid, "sink offset %d of connector %q: partition %d: Kafka partitions must not be negative", i, o.Connector, o.Partition)
		case o.Offset < 0:
			return api.Import{}, errorf(ErrInvalid, "sink offset %d of connector %q: offset %d: Kafka offsets must not be negative", i, o.Connector, o.Offset)
		}
		op := connectstore.SinkOffsetOp(o.Connector, connectstore.SinkOffset{Topic: o.Topic, Partition: o.Partition, Offset: o.Offset})
		if err := stage(n, op); err != nil {
			return api.Import{}, err
		}
	}
	// A partition sent again in a later request counts again.
	j.SourceOffsets += sources
	j.SinkOffsets += added
	j.ActiveAt = im.cfg.Now().UTC()
	ops = append(ops, store.Put(journalKey(id), mustJSON(j)))
	if _, ok, err := im.st.Batch(ctx, []store.Cond{{Key: journalKey(id), ModRevision: rev}}, ops); err != nil {
		return api.Import{}, fmt.Errorf("stage the offsets of import %s: %w", id, err)
	} else if !ok {
		return api.Import{}, errorf(ErrConflict, "import %s changed while its offsets were staged (a leader change?): retry", id)
	}
	return j.api(), nil
}

// stagedKV is a staged connector and its key's revision.
type stagedKV struct {
	key string
	n   int
	rev int64
	sc  stagedConn
}

func (im *Importer) stagedConns(ctx context.Context, id string) ([]stagedKV, error) {
	kvs, _, err := im.st.Scan(ctx, connPrefix(id), 0)
	if err != nil {
		return nil, err
	}
	out := make([]stagedKV, 0, len(kvs))
	for _, kv := range kvs {
		s, err := decodeStaged(kv)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func decodeStaged(kv store.KV) (stagedKV, error) {
	n, err := strconv.Atoi(kv.Key[strings.LastIndexByte(kv.Key, '/')+1:])
	if err != nil {
		return stagedKV{}, fmt.Errorf("%s: bad staging key", kv.Key)
	}
	s := stagedKV{key: kv.Key, n: n, rev: kv.ModRevision}
	if err := json.Unmarshal(kv.Value, &s.sc); err != nil {
		return stagedKV{}, fmt.Errorf("%s: %w", kv.Key, err)
	}
	return s, nil
}

// Commit commits a staging import and rolls it forward; for a committed
// one it finishes the roll-forward; for a done one it answers its state.
func (im *Importer) Commit(ctx context.Context, id string) (api.Import, error) {
	im.mu.Lock()
	defer im.mu.Unlock()
	j, rev, err := im.journal(ctx, id)
	if err != nil {
		return api.Import{}, err
	}
	switch j.State {
	case api.ImportDone:
		return j.api(), nil
	case api.ImportAborted:
		return api.Import{}, errorf(ErrConflict, "import %s was aborted: import again", id)
	case api.ImportCommitted:
		return im.rollForward(ctx, j, rev)
	}
	conns, err := im.stagedConns(ctx, id)
	if err != nil {
		return api.Import{}, err
	}
	configs, err := im.cs.Configs(ctx)
	if err != nil {
		return api.Import{}, fmt.Errorf("read the connectors: %w", err)
	}
	var changed []string
	for _, c := range conns {
		cur, exists := configs[c.sc.Name]
		switch c.sc.Action {
		case api.ImportCreate:
			if exists {
				changed = append(changed, c.sc.Name+" (created meanwhile)")
			}
		case api.ImportOverwrite:
			if !exists || cur.Rev != c.sc.ConfigRev {
				changed = append(changed, c.sc.Name+" (changed or deleted meanwhile)")
				continue
			}
			if stopped, err := im.cs.Stopped(ctx, c.sc.Name); err != nil {
				return api.Import{}, err
			} else if !stopped {
				changed = append(changed, c.sc.Name+" (no longer stopped)")
			}
		}
	}
	if len(changed) > 0 {
		return api.Import{}, errorf(ErrConflict, "import %s cannot commit, nothing was changed: %s. Abort it (DELETE /kcd/v1/imports/%s) and import again", id, names(changed), id)
	}
	for _, c := range conns {
		if c.sc.Action == api.ImportCreate {
			if err := im.cs.RemoveLeftovers(ctx, c.sc.Name); err != nil {
				return api.Import{}, fmt.Errorf("remove what an earlier connector %s left: %w", c.sc.Name, err)
			}
		}
	}
	// The commit point: every connector exists, stopped, or nothing.
	conds := make([]store.Cond, 0, len(conns)+1)
	ops := make([]store.Op, 0, 2*len(conns)+1)
	for _, c := range conns {
		conds = append(conds, connectstore.ConfigCond(c.sc.Name, c.sc.ConfigRev))
		ops = append(ops, connectstore.ConfigOp(c.sc.Name, c.sc.Config), connectstore.TargetOp(c.sc.Name, connectstore.TargetStopped))
	}
	j.State = api.ImportCommitted
	j.ActiveAt = im.cfg.Now().UTC()
	conds = append(conds, store.Cond{Key: journalKey(id), ModRevision: rev})
	ops = append(ops, store.Put(journalKey(id), mustJSON(j)))
	crev, ok, err := im.st.Batch(ctx, conds, ops)
	if err != nil {
		return api.Import{}, fmt.Errorf("commit import %s: %w", id, err)
	}
	if !ok {
		return api.Import{}, errorf(ErrConflict, "import %s cannot commit, nothing was changed: a connector of the import or the import itself changed meanwhile; retry the commit", id)
	}
	im.log.Info("import committed", "import", id, "connectors", len(conns), "revision", crev)
	if im.afterCommit != nil {
		if err := im.afterCommit(); err != nil {
			return api.Import{}, err
		}
	}
	// The roll-forward goes on if the client goes away.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollForwardTimeout)
	defer cancel()
	return im.rollForward(rctx, j, crev)
}

// rollForwardTimeout bounds one attempt at a roll-forward; Run tries
// again.
const rollForwardTimeout = 10 * time.Minute

// rollForward finishes a committed import whose journal is at revision
// crev (the commit's: the journal is not written again until done).
func (im *Importer) rollForward(ctx context.Context, j journal, crev int64) (api.Import, error) {
	conns, err := im.stagedConns(ctx, j.ID)
	if err != nil {
		return api.Import{}, err
	}
	for _, c := range conns {
		if err := im.finish(ctx, j.ID, c); err != nil {
			return api.Import{}, fmt.Errorf("import %s: finish connector %s: %w", j.ID, c.sc.Name, err)
		}
	}
	j.State, j.Revision, j.EndedAt = api.ImportDone, crev, im.cfg.Now().UTC()
	ops := []store.Op{store.Put(journalKey(j.ID), mustJSON(j))}
	conds := []store.Cond{{Key: journalKey(j.ID), ModRevision: crev}}
	if kv, found, err := im.st.Get(ctx, openKey); err != nil {
		return api.Import{}, err
	} else if found && string(kv.Value) == j.ID {
		ops = append(ops, store.Delete(openKey))
		conds = append(conds, store.Cond{Key: openKey, ModRevision: kv.ModRevision})
	}
	if _, ok, err := im.st.Batch(ctx, conds, ops); err != nil {
		return api.Import{}, fmt.Errorf("import %s: mark it done: %w", j.ID, err)
	} else if !ok {
		now, _, err := im.journal(ctx, j.ID)
		if err != nil {
			return api.Import{}, err
		}
		if now.State != api.ImportDone {
			return api.Import{}, errorf(ErrConflict, "import %s changed while it was rolled forward: retry", j.ID)
		}
		return now.api(), nil
	}
	im.log.Info("import done", "import", j.ID, "connectors", len(conns))
	im.prune(ctx)
	return j.api(), nil
}

// moveChunk is how many staged offsets move in one batch: each takes a
// condition (its staged key) and two ops (put the final key, delete the
// staged one), besides the staging key's condition and mark; moveBytes
// bounds the values of one batch.
const (
	moveChunk = (store.MaxBatchOps - 1) / 2
	moveBytes = 512 << 10
)

// finish rolls one connector of a committed import forward. Each step is
// conditioned on the staging keys it consumes: run twice, or by two
// leaders at once, it takes effect once.
func (im *Importer) finish(ctx context.Context, id string, c stagedKV) error {
	for attempt := 0; ; attempt++ {
		err := im.finishOnce(ctx, id, c)
		if !errors.Is(err, errLost) {
			return err
		}
		if attempt >= 20 {
			return fmt.Errorf("staging key %s keeps changing", c.key)
		}
		kv, found, err := im.st.Get(ctx, c.key)
		if err != nil {
			return err
		}
		if !found {
			return nil // finished by another attempt
		}
		if c, err = decodeStaged(kv); err != nil {
			return err
		}
	}
}

func (im *Importer) finishOnce(ctx context.Context, id string, c stagedKV) error {
	name := c.sc.Name
	self := store.Cond{Key: c.key, ModRevision: c.rev}
	if !c.sc.Cleared {
		// The offsets the connector has that the import does not carry
		// go: the import's are the connector's offsets afterwards.
		staged, _, err := im.st.Scan(ctx, offPrefix(id, c.n), 0)
		if err != nil {
			return err
		}
		keep := make(map[string]bool, len(staged))
		for _, kv := range staged {
			var so stagedOffset
			if err := json.Unmarshal(kv.Value, &so); err != nil {
				return fmt.Errorf("%s: %w", kv.Key, err)
			}
			keep[so.Key] = true
		}
		existing, err := im.cs.OffsetKeys(ctx, name)
		if err != nil {
			return err
		}
		var del []store.Op
		for _, k := range existing {
			if !keep[k] {
				del = append(del, store.Delete(k))
			}
		}
		for len(del) > 0 {
			n := min(len(del), store.MaxBatchOps)
			if _, ok, err := im.st.Batch(ctx, []store.Cond{self}, del[:n]); err != nil {
				return err
			} else if !ok {
				return errLost
			}
			del = del[n:]
		}
	}
	for {
		kvs, _, err := im.st.Scan(ctx, offPrefix(id, c.n), moveChunk)
		if err != nil {
			return err
		}
		if len(kvs) == 0 {
			break
		}
		conds := []store.Cond{self}
		var ops []store.Op
		size := 0
		for _, kv := range kvs {
			if len(ops) > 0 && size+len(kv.Value) > moveBytes {
				break
			}
			var so stagedOffset
			if err := json.Unmarshal(kv.Value, &so); err != nil {
				return fmt.Errorf("%s: %w", kv.Key, err)
			}
			conds = append(conds, store.Cond{Key: kv.Key, ModRevision: kv.ModRevision})
			ops = append(ops, store.Put(so.Key, so.Value), store.Delete(kv.Key))
			size += len(kv.Value)
		}
		// The first move marks the clearing done: after it, a staged
		// offset already moved must not be taken for a stale one.
		marked := !c.sc.Cleared
		if marked {
			c.sc.Cleared = true
			ops = append(ops, store.Put(c.key, mustJSON(c.sc)))
		}
		rev, ok, err := im.st.Batch(ctx, conds, ops)
		if err != nil {
			return err
		}
		if !ok {
			return errLost
		}
		if marked {
			c.rev, self.ModRevision = rev, rev
		}
	}
	// Task configs, target state, and the staging key gone: one batch.
	_, cfgRev, err := im.cs.Config(ctx, name)
	if errors.Is(err, connectstore.ErrNotFound) {
		// Deleted since the commit: nothing to set.
		if _, ok, err := im.st.Batch(ctx, []store.Cond{self}, []store.Op{store.Delete(c.key)}); err != nil || ok {
			return err
		}
		return errLost
	}
	if err != nil {
		return err
	}
	tc, tasksRev, err := im.cs.TasksAt(ctx, name)
	if err != nil {
		return err
	}
	conds := []store.Cond{self, connectstore.ConfigCond(name, cfgRev), connectstore.TasksCond(name, tasksRev)}
	var ops []store.Op
	if c.sc.Target != connectstore.TargetStopped && len(c.sc.Tasks) > 0 {
		ops = append(ops, connectstore.TasksOp(name, connectstore.TaskConfigs{Generation: tc.Generation + 1, Tasks: c.sc.Tasks}))
	}
	if c.sc.Target != connectstore.TargetStopped { // the commit stopped it
		ops = append(ops, connectstore.TargetOp(name, c.sc.Target))
	}
	ops = append(ops, store.Delete(c.key))
	if _, ok, err := im.st.Batch(ctx, conds, ops); err != nil {
		return err
	} else if !ok {
		return errLost // the staging key, the config or the tasks changed: look again
	}
	return nil
}

// Abort drops a staging import and everything it staged.
func (im *Importer) Abort(ctx context.Context, id string) (api.Import, error) {
	im.mu.Lock()
	defer im.mu.Unlock()
	return im.abort(ctx, id, "aborted by request")
}

func (im *Importer) abort(ctx context.Context, id, why string) (api.Import, error) {
	j, rev, err := im.journal(ctx, id)
	if err != nil {
		return api.Import{}, err
	}
	switch j.State {
	case api.ImportAborted:
		return j.api(), im.dropData(ctx, id)
	case api.ImportCommitted, api.ImportDone:
		return api.Import{}, errorf(ErrConflict, "import %s is %s: a committed import cannot be aborted", id, j.State)
	}
	j.State, j.EndedAt, j.Error = api.ImportAborted, im.cfg.Now().UTC(), why
	ops := []store.Op{store.Put(journalKey(id), mustJSON(j))}
	conds := []store.Cond{{Key: journalKey(id), ModRevision: rev}}
	if kv, found, err := im.st.Get(ctx, openKey); err != nil {
		return api.Import{}, err
	} else if found && string(kv.Value) == id {
		ops = append(ops, store.Delete(openKey))
		conds = append(conds, store.Cond{Key: openKey, ModRevision: kv.ModRevision})
	}
	if _, ok, err := im.st.Batch(ctx, conds, ops); err != nil {
		return api.Import{}, fmt.Errorf("abort import %s: %w", id, err)
	} else if !ok {
		return api.Import{}, errorf(ErrConflict, "import %s changed while it was aborted: retry", id)
	}
	im.log.Info("import aborted", "import", id, "why", why)
	if err := im.dropData(ctx, id); err != nil {
		return j.api(), fmt.Errorf("import %s aborted; removing what it staged (retried later): %w", id, err)
	}
	im.prune(ctx)
	return j.api(), nil
}

// dropData removes what an aborted or finished import staged.
func (im *Importer) dropData(ctx context.Context, id string) error {
	for {
		kvs, _, err := im.st.Scan(ctx, dataPrefix(id), store.MaxBatchOps)
		if err != nil || len(kvs) == 0 {
			return err
		}
		ops := make([]store.Op, len(kvs))
		for i, kv := range kvs {
			ops[i] = store.Delete(kv.Key)
		}
		if _, _, err := im.st.Batch(ctx, nil, ops); err != nil {
			return err
		}
	}
}

// prune removes finished journals beyond KeepJournals or older than
// KeepFor; failures wait for the next time.
func (im *Importer) prune(ctx context.Context) {
	js, err := im.journals(ctx)
	if err != nil {
		return
	}
	kept := 0
	for _, j := range js {
		if j.State != api.ImportDone && j.State != api.ImportAborted {
			continue
		}
		kept++
		if kept <= im.cfg.KeepJournals && im.cfg.Now().Sub(j.EndedAt) < im.cfg.KeepFor {
			continue
		}
		if im.dropData(ctx, j.ID) == nil {
			_, _, _ = im.st.Delete(ctx, journalKey(j.ID))
		}
	}
}

// Recover finishes a committed import, aborts a staging one idle for
// StaleAfter, and removes what finished ones left; Run calls it.
func (im *Importer) Recover(ctx context.Context) error {
	im.mu.Lock()
	defer im.mu.Unlock()
	kv, found, err := im.st.Get(ctx, openKey)
	if err != nil {
		return err
	}
	if found {
		id := string(kv.Value)
		j, rev, err := im.journal(ctx, id)
		switch {
		case errors.Is(err, ErrNotFound):
			_, _, err = im.st.Batch(ctx, []store.Cond{{Key: openKey, ModRevision: kv.ModRevision}}, []store.Op{store.Delete(openKey)})
			return err
		case err != nil:
			return err
		case j.State == api.ImportCommitted:
			im.log.Info("finishing a committed import", "import", id)
			if _, err := im.rollForward(ctx, j, rev); err != nil {
				return err
			}
		case j.State == api.ImportStaging && im.cfg.Now().Sub(j.ActiveAt) >= im.cfg.StaleAfter:
			if _, err := im.abort(ctx, id, fmt.Sprintf("no request for %v", im.cfg.StaleAfter)); err != nil {
				return err
			}
		}
	}
	js, err := im.journals(ctx)
	if err != nil {
		return err
	}
	for _, j := range js {
		if j.State == api.ImportAborted || j.State == api.ImportDone {
			if err := im.dropData(ctx, j.ID); err != nil {
				return err
			}
		}
	}
	im.prune(ctx)
	return nil
}

// Run calls Recover at the start of every leadership of this node and
// every RecoverEvery while it leads, until ctx ends.
func (im *Importer) Run(ctx context.Context) {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	var term uint64
	var last time.Time
	for ctx.Err() == nil {
		leads, now := im.cfg.Leader == nil, uint64(1)
		if !leads {
			leads, now = im.cfg.Leader.IsLeader(), im.cfg.Leader.Term()
		}
		switch {
		case !leads:
			term = 0
		case now != term || time.Since(last) >= im.cfg.RecoverEvery:
			term, last = now, time.Now()
			if err := im.Recover(ctx); err != nil && ctx.Err() == nil {
				im.log.Warn("import recovery failed; retrying", "err", err)
				last = time.Now().Add(time.Second - im.cfg.RecoverEvery) // again in a second
			}
		}
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
}
