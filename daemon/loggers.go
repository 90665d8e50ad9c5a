package daemon

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/kcd-project/kcd/api"
	"github.com/kcd-project/kcd/daemon/loglevels"
	"github.com/kcd-project/kcd/store"
)

// loggerKeyPrefix holds the levels set with scope=cluster, one key per
// logger, as Kafka Connect's logger-cluster- records: every node applies
// them as they change, and a node that starts applies those stored, in
// the order they were set.
const loggerKeyPrefix = "kcd/loggers/"

// clusterLevel is the value of a key under loggerKeyPrefix.
type clusterLevel struct {
	Level    string `json:"level"`
	Modified int64  `json:"modified"` // ms since the epoch
}

// nodeLoggers serves /admin/loggers for the node: its own levels, and the
// cluster's through the store.
type nodeLoggers struct {
	levels *loglevels.Levels
	store  store.Store
	log    *slog.Logger

	mu      sync.Mutex
	applied int64         // the store revision the node's levels follow
	changed chan struct{} // closed and replaced when applied grows
}

// levelsOf returns the levels log follows, wrapping log's handler in new
// ones (starting at level) when it has none.
func levelsOf(log *slog.Logger, level string) (*slog.Logger, *loglevels.Levels) {
	if lv := loglevels.Of(log); lv != nil {
		return log, lv
	}
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	lv := loglevels.New(l)
	return slog.New(loglevels.NewHandler(log.Handler(), lv)), lv
}

func (l *nodeLoggers) All() map[string]api.LoggerLevel { return l.levels.All() }

func (l *nodeLoggers) Level(name string) (api.LoggerLevel, bool) { return l.levels.Level(name) }

func (l *nodeLoggers) Set(name, level string) ([]string, bool) {
	changed, ok := l.levels.Set(name, level, time.Time{})
	if ok {
		l.log.Info("log level set", "logger", name, "level", level, "scope", api.ScopeWorker)
	}
	return changed, ok
}

func (l *nodeLoggers) SetCluster(ctx context.Context, name, level string) error {
	v, _ := json.Marshal(clusterLevel{Level: level, Modified: time.Now().UnixMilli()})
	rev, err := l.store.Put(ctx, loggerKeyPrefix+name, v)
	if err != nil {
		return fmt.Errorf("store the level of logger %s: %w", name, err)
	}
	// Answer once this node applied it, so that a GET here sees it.
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for {
		l.mu.Lock()
		applied, changed := l.applied, l.changed
		l.mu.Unlock()
		if applied >= rev {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil // stored: the node applies it when its watch catches up
		}
	}
}

// advance records that the levels follow the store up to rev.
func (l *nodeLoggers) advance(rev int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if rev > l.applied {
		l.applied = rev
		close(l.changed)
		l.changed = make(chan struct{})
	}
}

// apply sets the level a key under loggerKeyPrefix holds.
func (l *nodeLoggers) apply(kv store.KV) {
	name := kv.Key[len(loggerKeyPrefix):]
	var v clusterLevel
	if err := json.Unmarshal(kv.Value, &v); err != nil {
		l.log.Warn("ignoring a stored log level that is no JSON", "key", kv.Key, "err", err)
		return
	}
	level, err := api.ParseLogLevel(v.Level)
	if err != nil {
		l.log.Warn("ignoring a stored log level", "key", kv.Key, "err", err)
		return
	}
	if _, ok := l.levels.Set(name, level, time.UnixMilli(v.Modified)); !ok {
		l.log.Warn("ignoring the stored level of a logger this node does not have", "logger", name)
		return
	}
	l.log.Info("log level set", "logger", name, "level", level, "scope", api.ScopeCluster)
}

// follow applies the stored cluster levels, then each change, until ctx
// ends.
func (l *nodeLoggers) follow(ctx context.Context) {
	var rev int64
	resync := true
	failures := 0
	for ctx.Err() == nil {
		var err error
		if resync {
			if rev, err = l.load(ctx); err == nil {
				resync = false
			}
			if err == nil && rev == 0 {
				// Watch(…, 0) means "from now on", not "after revision
				// 0": a write between the read and the watch would be
				// missed. A store never written to is read again.
				resync = true
				if !sleepCtx(ctx, 100*time.Millisecond) {
					return
				}
				continue
			}
		}
		var w store.Watcher
		if err == nil {
			w, err = l.store.Watch(ctx, loggerKeyPrefix, rev)
		}
		if err == nil {
			rev, err = l.drain(ctx, w, rev)
			w.Close()
		}
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, store.ErrWatcherLagging):
			failures = 0
			continue
		case errors.Is(err, store.ErrCompacted):
			resync, failures = true, 0
			continue
		}
		failures++
		if failures == 1 || failures%20 == 0 {
			l.log.Warn("follow the cluster's log levels; retrying", "err", err, "failures", failures)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(min(time.Duration(failures)*100*time.Millisecond, 2*time.Second)):
		}
	}
}

// load applies every stored level, oldest change first, and returns the
// revision it read at.
func (l *nodeLoggers) load(ctx context.Context) (int64, error) {
	kvs, rev, err := l.store.Scan(ctx, loggerKeyPrefix, 0)
	if err != nil {
		return 0, fmt.Errorf("read the cluster's log levels: %w", err)
	}
	slices.SortFunc(kvs, func(a, b store.KV) int { return cmp.Compare(a.ModRevision, b.ModRevision) })
	for _, kv := range kvs {
		l.apply(kv)
	}
	l.advance(rev)
	return rev, nil
}

// drain applies the events of one watch until it ends, and returns the
// last revision applied.
func (l *nodeLoggers) drain(ctx context.Context, w store.Watcher, rev int64) (int64, error) {
	for {
		select {
		case <-ctx.Done():
			return rev, ctx.Err()
		case ev, ok := <-w.Events():
			if !ok {
				if err := w.Err(); err != nil {
					return rev, err
				}
				return rev, errors.New("watch ended")
			}
			if ev.Type == store.EventPut {
				l.apply(ev.KV)
			}
			rev = ev.KV.ModRevision
			l.advance(rev)
		}
	}
}

// sleepCtx waits d, or less when ctx ends; it tells whether ctx is live.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}
