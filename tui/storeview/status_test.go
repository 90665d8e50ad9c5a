package storeview

import (
	"strings"
	"testing"
	"time"

	"github.com/kcd-project/kcd/api"
)

var now = time.Date(2026, 12, 3, 18, 0, 0, 0, time.UTC)

func TestStatusOfTheRaftStoreWithoutASwitch(t *testing.T) {
	st := api.StoreStatus{Backend: "raft", Healthy: true, LatencyMillis: 0.25, Revision: 42, Backends: []string{"mysql", "postgres", "raft"}}
	want := `Backend:       raft
Settings:      <none>
Health:        healthy (a read took 250µs)
Revision:      42
Active since:  the cluster's start
Backends:      mysql, postgres, raft
Last switch:   <none>
`
	if got := Status(st, now); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestStatusAfterASwitch(t *testing.T) {
	st := api.StoreStatus{
		Backend: "mysql", Settings: map[string]string{"dsn": "kcd:*****@tcp(db:3306)/kcd", "max_open": "8"},
		Since: now.Add(-5 * time.Minute), Healthy: true, LatencyMillis: 1.5, Revision: 1234,
		Backends: []string{"mysql", "raft"},
		LastSwitch: &api.StoreSwitch{ID: "s1", From: "raft", To: "mysql", State: api.SwitchDone, Phase: api.PhaseDone,
			Copied: 1000, Total: 1000, Revision: 1200, Checksum: "c0ffee", HoldMillis: 42,
			StartedAt: now.Add(-5*time.Minute - 2500*time.Millisecond), EndedAt: now.Add(-5 * time.Minute)},
	}
	want := `Backend:        mysql
Settings:       dsn=kcd:*****@tcp(db:3306)/kcd, max_open=8
Health:         healthy (a read took 1.5ms)
Revision:       1234
Active since:   2026-12-03T17:55:00Z (5m ago)
Backends:       mysql, raft
Last switch:    raft → mysql, done 5m ago, took 2.5s
  Id:           s1
  Keys copied:  1000 of 1000
  Writes held:  42ms
  At revision:  1200
  Checksum:     c0ffee
`
	if got := Status(st, now); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestStatusOfAFailedAndOfARunningSwitch(t *testing.T) {
	st := api.StoreStatus{Backend: "raft", Healthy: false, Error: "read timed out",
		LastSwitch: &api.StoreSwitch{ID: "s2", From: "raft", To: "postgres", State: api.SwitchFailed, Phase: api.PhaseCopy,
			Copied: 10, Total: 99, Error: "postgres: connection refused", StartedAt: now.Add(-time.Minute)}}
	got := Status(st, now)
	for _, want := range []string{
		"Health:         UNHEALTHY: read timed out\n",
		"Last switch:    raft → postgres, failed\n", // no end time: no age, no duration
		"  Keys copied:  10 of 99\n",
		"  Writes held:  0s\n",
		"  Error:        postgres: connection refused\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}

	st.LastSwitch = &api.StoreSwitch{ID: "s3", From: "raft", To: "mysql", State: api.SwitchRunning, Phase: api.PhaseCopy,
		Copied: 1200, Total: 100000, StartedAt: now.Add(-3 * time.Second)}
	got = Status(st, now)
	if !strings.Contains(got, "raft → mysql, running (copy), started 3s ago\n") || !strings.Contains(got, "1200 of 100000") {
		t.Errorf("running switch:\n%s", got)
	}
	if strings.Contains(got, "Writes held") {
		t.Errorf("a running switch has no hold figure yet:\n%s", got)
	}
}

func TestSummaries(t *testing.T) {
	start := now.Add(-1500 * time.Millisecond)
	for _, tc := range []struct {
		sw   api.StoreSwitch
		want string
	}{
		{api.StoreSwitch{ID: "a", From: "raft", To: "mysql", State: api.SwitchDone, Phase: api.PhaseDone, Copied: 7, Total: 7, HoldMillis: 3.25, Revision: 9, Checksum: "ab", StartedAt: start, EndedAt: now},
			"store switched from raft to mysql in 1.5s: 7 keys copied, writes held 3.25ms, at revision 9, checksum ab"},
		{api.StoreSwitch{ID: "b", From: "raft", To: "mysql", State: api.SwitchDryRun, Total: 12},
			"dry run: a switch from raft to mysql would copy 12 keys; nothing changed"},
		{api.StoreSwitch{ID: "c", From: "mysql", To: "raft", State: api.SwitchRunning, Phase: api.PhaseCheck},
			"switch/c started: mysql → raft; follow it with 'kcctl store status'"},
		{api.StoreSwitch{ID: "d", From: "raft", To: "mysql", State: api.SwitchFailed, Phase: api.PhaseVerify, Error: "checksum differs"},
			"the switch from raft to mysql failed in phase verify: checksum differs; raft stays the active backend"},
	} {
		if got := Summary(tc.sw); got != tc.want {
			t.Errorf("%s:\ngot  %q\nwant %q", tc.sw.ID, got, tc.want)
		}
	}
}
