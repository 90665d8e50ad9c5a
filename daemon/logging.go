package daemon

import (
	"io"
	"log/slog"

	"github.com/kcd-project/kcd/daemon/loglevels"
)

// NewLogger builds the daemon's logger from the configured level and format.
// The values were validated with the configuration. The level is the root
// logger's; each subsystem's can be changed at run time (loggers.go).
func NewLogger(w io.Writer, level, format string) *slog.Logger {
	var lv slog.Level
	_ = lv.UnmarshalText([]byte(level))
	// The handler writes every level; loglevels decides what reaches it.
	opts := &slog.HandlerOptions{Level: loglevels.LevelTrace, ReplaceAttr: levelNames}
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if format == "json" {
		h = slog.NewJSONHandler(w, opts)
	}
	return slog.New(loglevels.NewHandler(h, loglevels.New(lv)))
}

// levelNames writes TRACE rather than slog's DEBUG-4.
func levelNames(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 && a.Key == slog.LevelKey {
		if l, ok := a.Value.Any().(slog.Level); ok && l < slog.LevelDebug {
			a.Value = slog.StringValue("TRACE")
		}
	}
	return a
}
