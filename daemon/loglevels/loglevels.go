// Package loglevels gives kcd's loggers levels that change at run time: one
// logger per subsystem (the "subsys" attribute of its slog.Logger) and the
// root logger that the others follow until set themselves, as Kafka
// Connect's /admin/loggers sets log4j loggers.
package loglevels

import (
	"context"
	"log/slog"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kcd-project/kcd/api"
)

// Subsystems are the loggers kcd's code creates, by their "subsys"
// attribute; a logger made with another one is added when it is made.
var Subsystems = []string{
	"activestore", "connector", "coordinator", "herder", "importer", "logstore", "member",
	"raft", "raft-transport", "remotestore", "rest", "rest-tls", "restauth", "worker",
}

// The slog levels of the API's levels: TRACE is below slog's DEBUG, FATAL
// above ERROR (kcd logs nothing there, so FATAL silences everything but
// what kcd never writes), OFF above everything.
const (
	LevelTrace = slog.LevelDebug - 4
	LevelFatal = slog.LevelError + 4
	LevelOff   = slog.Level(math.MaxInt32)
)

// SlogLevel is the slog level of an API level (see api.LogLevels).
func SlogLevel(level string) (slog.Level, bool) {
	switch level {
	case "TRACE":
		return LevelTrace, true
	case "DEBUG":
		return slog.LevelDebug, true
	case "INFO":
		return slog.LevelInfo, true
	case "WARN":
		return slog.LevelWarn, true
	case "ERROR":
		return slog.LevelError, true
	case "FATAL":
		return LevelFatal, true
	case "OFF":
		return LevelOff, true
	}
	return 0, false
}

// Name is the API level of a slog level: the most verbose API level that
// still lets l's records through.
func Name(l slog.Level) string {
	switch {
	case l <= LevelTrace:
		return "TRACE"
	case l <= slog.LevelDebug:
		return "DEBUG"
	case l <= slog.LevelInfo:
		return "INFO"
	case l <= slog.LevelWarn:
		return "WARN"
	case l <= slog.LevelError:
		return "ERROR"
	case l <= LevelFatal:
		return "FATAL"
	}
	return "OFF"
}

// logger is one named logger's state.
type logger struct {
	level    atomic.Int64 // the effective slog level, read by Enabled
	explicit bool         // set itself (else it follows root); under Levels.mu
	modified int64        // ms since the epoch of the last change by Set; 0 never
}

// Levels holds the levels of one node's loggers.
type Levels struct {
	mu      sync.Mutex
	root    *logger
	loggers map[string]*logger // by subsystem, root not included
	now     func() time.Time
}

// New returns the levels of a node whose root logger starts at root, every
// subsystem following it.
func New(root slog.Level) *Levels {
	lv := &Levels{root: &logger{}, loggers: map[string]*logger{}, now: time.Now}
	lv.root.level.Store(int64(root))
	for _, s := range Subsystems {
		lv.get(s)
	}
	return lv
}

// get returns name's logger, adding it (following root) if new.
func (lv *Levels) get(name string) *logger {
	lv.mu.Lock()
	defer lv.mu.Unlock()
	if name == api.RootLogger {
		return lv.root
	}
	l, ok := lv.loggers[name]
	if !ok {
		l = &logger{}
		l.level.Store(lv.root.level.Load())
		lv.loggers[name] = l
	}
	return l
}

// Level returns name's level; false when no such logger exists.
func (lv *Levels) Level(name string) (api.LoggerLevel, bool) {
	lv.mu.Lock()
	defer lv.mu.Unlock()
	l := lv.root
	if name != api.RootLogger {
		var ok bool
		if l, ok = lv.loggers[name]; !ok {
			return api.LoggerLevel{}, false
		}
	}
	return l.state(), true
}

func (l *logger) state() api.LoggerLevel {
	s := api.LoggerLevel{Level: Name(slog.Level(l.level.Load()))}
	if l.modified != 0 {
		m := l.modified
		s.LastModified = &m
	}
	return s
}

// All returns every logger's level, root included.
func (lv *Levels) All() map[string]api.LoggerLevel {
	lv.mu.Lock()
	defer lv.mu.Unlock()
	out := make(map[string]api.LoggerLevel, len(lv.loggers)+1)
	out[api.RootLogger] = lv.root.state()
	for n, l := range lv.loggers {
		out[n] = l.state()
	}
	return out
}

// Set sets name's level (an API level) and returns the loggers it changed,
// sorted: name, or for root every logger, as setting root in Kafka Connect
// sets all its descendants. modified is the time to report as the change's
// (zero: now). A name that is no logger is false.
func (lv *Levels) Set(name, level string, modified time.Time) ([]string, bool) {
	sl, ok := SlogLevel(level)
	if !ok {
		return nil, false
	}
	if modified.IsZero() {
		modified = lv.now()
	}
	ms := modified.UnixMilli()
	lv.mu.Lock()
	defer lv.mu.Unlock()
	if name != api.RootLogger {
		l, ok := lv.loggers[name]
		if !ok {
			return nil, false
		}
		l.explicit, l.modified = true, ms
		l.level.Store(int64(sl))
		return []string{name}, true
	}
	lv.root.modified = ms
	lv.root.level.Store(int64(sl))
	changed := []string{api.RootLogger}
	for n, l := range lv.loggers {
		l.explicit, l.modified = false, ms
		l.level.Store(int64(sl))
		changed = append(changed, n)
	}
	slices.Sort(changed)
	return changed, true
}

// Handler is a slog.Handler that lets through the records its logger's
// level allows, and hands them to the handler it wraps. The logger is the
// last "subsys" (or "subsystem") attribute given to WithAttrs, else root.
type Handler struct {
	inner  slog.Handler
	levels *Levels
	level  *atomic.Int64
}

// NewHandler wraps inner with lv's levels. inner should let through every
// level (LevelTrace up): a record inner refuses stays refused.
func NewHandler(inner slog.Handler, lv *Levels) *Handler {
	return &Handler{inner: inner, levels: lv, level: &lv.root.level}
}

// Levels returns the levels the handler follows, so that the node that
// logs through it can change them.
func (h *Handler) Levels() *Levels { return h.levels }

func (h *Handler) Enabled(ctx context.Context, l slog.Level) bool {
	return int64(l) >= h.level.Load() && h.inner.Enabled(ctx, l)
}

func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	return h.inner.Handle(ctx, r)
}

func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	out := &Handler{inner: h.inner.WithAttrs(attrs), levels: h.levels, level: h.level}
	for _, a := range attrs {
		if a.Key == "subsys" || a.Key == "subsystem" {
			if name := a.Value.Resolve().String(); name != "" && name != api.RootLogger {
				out.level = &h.levels.get(name).level
			}
		}
	}
	return out
}

func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{inner: h.inner.WithGroup(name), levels: h.levels, level: h.level}
}

// Of returns the levels that log's handler follows, or nil when it is no
// Handler (nor wraps one that says so).
func Of(log *slog.Logger) *Levels {
	if h, ok := log.Handler().(interface{ Levels() *Levels }); ok {
		return h.Levels()
	}
	return nil
}
