package loglevels

import (
	"bytes"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kcd-project/kcd/api"
)

func TestLevelsPerSubsystem(t *testing.T) {
	var buf bytes.Buffer
	lv := New(slog.LevelInfo)
	log := slog.New(NewHandler(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: LevelTrace}), lv))
	coord, rest := log.With("subsys", "coordinator"), log.With("subsys", "rest")
	// A subsystem below another (a connector's logger made from the
	// worker's) follows its own level.
	conn := log.With("subsys", "worker").With("connector", "c1", "subsys", "connector")

	coord.Debug("coord before")
	rest.Debug("rest before")
	if changed, ok := lv.Set("coordinator", "DEBUG", time.Time{}); !ok || !slices.Equal(changed, []string{"coordinator"}) {
		t.Fatalf("set coordinator: %v %v", changed, ok)
	}
	coord.Debug("coord after")
	rest.Debug("rest after")
	conn.Debug("connector after")
	out := buf.String()
	for _, s := range []string{"coord before", "rest before", "rest after", "connector after"} {
		if strings.Contains(out, s) {
			t.Errorf("%q logged:\n%s", s, out)
		}
	}
	if !strings.Contains(out, "coord after") {
		t.Errorf("coordinator's DEBUG line missing:\n%s", out)
	}

	// Root sets every logger, the one set before included.
	changed, ok := lv.Set(api.RootLogger, "WARN", time.UnixMilli(42))
	if !ok || len(changed) != len(Subsystems)+1 {
		t.Fatalf("set root: %v %v", changed, ok)
	}
	buf.Reset()
	coord.Info("coord info")
	conn.Warn("connector warn")
	log.Info("root info")
	if out := buf.String(); strings.Contains(out, "info") || !strings.Contains(out, "connector warn") {
		t.Errorf("after root=WARN:\n%s", out)
	}
	if l, _ := lv.Level("coordinator"); l.Level != "WARN" || l.LastModified == nil || *l.LastModified != 42 {
		t.Errorf("coordinator after root set: %+v", l)
	}

	if _, ok := lv.Set("nope", "DEBUG", time.Time{}); ok {
		t.Error("an unknown logger was set")
	}
	if _, ok := lv.Set("rest", "LOUD", time.Time{}); ok {
		t.Error("an unknown level was set")
	}
	if _, ok := lv.Level("nope"); ok {
		t.Error("an unknown logger has a level")
	}
	// A subsystem first seen at run time is a logger too.
	log.With("subsys", "newthing")
	if l, ok := lv.Level("newthing"); !ok || l.Level != "WARN" || l.LastModified != nil {
		t.Errorf("newthing: %+v %v", l, ok)
	}
}

func TestOffSilencesAndNamesRoundTrip(t *testing.T) {
	for _, n := range api.LogLevels {
		l, ok := SlogLevel(n)
		if !ok || Name(l) != n {
			t.Errorf("%s: %v %v %s", n, l, ok, Name(l))
		}
	}
	var buf bytes.Buffer
	lv := New(slog.LevelInfo)
	log := slog.New(NewHandler(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: LevelTrace}), lv)).With("subsys", "raft")
	lv.Set("raft", "OFF", time.Time{})
	log.Error("raft error")
	if buf.Len() != 0 {
		t.Errorf("OFF let through: %s", buf.String())
	}
}
