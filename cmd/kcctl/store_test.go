package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kcd-project/kcd/api"
	"github.com/kcd-project/kcd/daemon/restapi"
)

// secretDSN must never appear in what kcctl prints.
const secretDSN = "kcd:s3cr3t-pw@tcp(db.example:3306)/kcd"

// fakeStore is the server side of the store endpoints as the contract has
// it: POST /kcd/v1/store/switch answers with switchAnswer (or fails with
// switchStatus and switchErr), and GET /kcd/v1/store/status answers the
// statuses in turn, then the last one forever. The first refusals POSTs
// are refused first: 409 with refusal and Retry-After retryAfter.
type fakeStore struct {
	mu           sync.Mutex
	requests     []api.StoreSwitchRequest
	switchStatus int
	switchErr    string
	switchAnswer api.StoreSwitch
	statuses     []api.StoreStatus
	polls        int

	refusals   int
	refusal    string
	retryAfter string
}

func (f *fakeStore) start(t *testing.T) string {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /kcd/v1/store/switch", func(w http.ResponseWriter, r *http.Request) {
		var req api.StoreSwitchRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			t.Errorf("switch request: %v", err)
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		f.requests = append(f.requests, req)
		w.Header().Set("Content-Type", "application/json")
		if f.refusals > 0 {
			f.refusals--
			if f.retryAfter != "" {
				w.Header().Set("Retry-After", f.retryAfter)
			}
			w.WriteHeader(http.StatusConflict)
			json.NewEncoder(w).Encode(restapi.ErrorMessage{ErrorCode: http.StatusConflict, Message: f.refusal})
			return
		}
		if f.switchStatus >= 400 {
			w.WriteHeader(f.switchStatus)
			json.NewEncoder(w).Encode(restapi.ErrorMessage{ErrorCode: f.switchStatus, Message: f.switchErr})
			return
		}
		if f.switchAnswer.State == api.SwitchRunning {
			w.WriteHeader(http.StatusAccepted)
		}
		json.NewEncoder(w).Encode(f.switchAnswer)
	})
	mux.HandleFunc("GET /kcd/v1/store/status", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		st := f.statuses[min(f.polls, len(f.statuses)-1)]
		f.polls++
		json.NewEncoder(w).Encode(st)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

func (f *fakeStore) counts() (requests, polls int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests), f.polls
}

var backends = []string{"mysql", "postgres", "raft"}

func switchStatus(backend string, sw api.StoreSwitch) api.StoreStatus {
	return api.StoreStatus{Backend: backend, Healthy: true, Backends: backends, LastSwitch: &sw}
}

// runningSwitch is a switch from raft to mysql at phase, copied of 1000.
func runningSwitch(phase string, copied int64) api.StoreSwitch {
	return api.StoreSwitch{ID: "sw1", From: "raft", To: "mysql", State: api.SwitchRunning, Phase: phase, Copied: copied, Total: 1000}
}

func noSecret(t *testing.T, outs ...string) {
	t.Helper()
	for _, out := range outs {
		if strings.Contains(out, "s3cr3t") {
			t.Errorf("kcctl printed the DSN's secret:\n%s", out)
		}
	}
}

// Bad flags are usage errors (exit 2), and say nothing of the values given.
func TestStoreSwitchUsageErrors(t *testing.T) {
	f := &fakeStore{statuses: []api.StoreStatus{{Backend: "raft"}}}
	url := f.start(t)
	for _, args := range [][]string{
		{"store", "switch"},
		{"store", "switch", "--to", " "},
		{"store", "switch", "--to", "mysql", "--set", "dsn:" + secretDSN},
		{"store", "switch", "--to", "mysql", "--set", "=" + secretDSN},
		{"store", "switch", "--to", "mysql", "--set", "dsn=" + secretDSN, "--set", "dsn=" + secretDSN},
		{"store", "switch", "--to", "mysql", "--dsn", secretDSN, "--set", "dsn=" + secretDSN},
		{"store", "switch", "--to", "mysql", "--dsn", secretDSN, "-o", "xml"},
		{"store", "switch", "mysql"},
		{"store", "status", "extra"},
		{"store", "nope"},
	} {
		code, out, errOut := kcctl(t, append([]string{"--server", url}, args...)...)
		if code != exitUsage || !strings.Contains(errOut, "Error:") {
			t.Errorf("%q: exit %d, stderr %q", args, code, errOut)
		}
		noSecret(t, out, errOut)
	}
	if n, _ := f.counts(); n != 0 {
		t.Errorf("%d switch requests were sent for bad flags", n)
	}
}

// The request carries the DSN in settings["dsn"], the other settings and
// the flags; kcctl follows the switch to its end with plain lines on
// stderr (not a terminal here), and prints the outcome on stdout.
func TestStoreSwitchFollowsToTheEnd(t *testing.T) {
	done := runningSwitch(api.PhaseDone, 1000)
	done.State, done.HoldMillis, done.Revision, done.Checksum = api.SwitchDone, 12.5, 77, "abc123"
	f := &fakeStore{
		switchAnswer: runningSwitch(api.PhaseCheck, 0),
		statuses: []api.StoreStatus{
			switchStatus("raft", runningSwitch(api.PhaseCheck, 0)),
			switchStatus("raft", runningSwitch(api.PhaseCopy, 500)),
			switchStatus("raft", runningSwitch(api.PhaseHold, 1000)),
			switchStatus("mysql", done),
		},
	}
	url := f.start(t)
	code, out, errOut := kcctl(t, "--server", url, "store", "switch", "--to", "mysql", "--dsn", secretDSN, "-s", "max_open=4", "--set", "password=${env:PW}", "--force")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	want := api.StoreSwitchRequest{Backend: "mysql", Force: true,
		Settings: map[string]string{"dsn": secretDSN, "max_open": "4", "password": "${env:PW}"}}
	if n, _ := f.counts(); n != 1 {
		t.Fatalf("%d switch requests sent", n)
	}
	if got := f.requests[0]; got.Backend != want.Backend || got.Force != want.Force || got.DryRun || !mapsEqual(got.Settings, want.Settings) {
		t.Errorf("request %+v, want %+v", got, want)
	}
	if out != "store switched from raft to mysql: 1000 keys copied, writes held 12.5ms, at revision 77, checksum abc123\n" {
		t.Errorf("stdout %q", out)
	}
	if errOut != "check 0/1000\ncopy 500/1000\nhold 1000/1000\ndone 1000/1000\n" {
		t.Errorf("progress lines %q", errOut)
	}
	noSecret(t, out, errOut)

	// -o json: the switch as it ended.
	f.polls = 0
	code, out, _ = kcctl(t, "--server", url, "store", "switch", "--to", "mysql", "-o", "json")
	var sw api.StoreSwitch
	if code != 0 || json.Unmarshal([]byte(out), &sw) != nil || sw.State != api.SwitchDone || sw.Checksum != "abc123" {
		t.Errorf("json: exit %d, %s", code, out)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// A failed switch exits 1 with the server's reason, and says that the old
// backend stays.
func TestStoreSwitchFailure(t *testing.T) {
	failed := runningSwitch(api.PhaseCopy, 300)
	failed.State, failed.Error = api.SwitchFailed, "mysql: connection refused"
	f := &fakeStore{switchAnswer: runningSwitch(api.PhaseCheck, 0),
		statuses: []api.StoreStatus{switchStatus("raft", runningSwitch(api.PhaseCopy, 300)), switchStatus("raft", failed)}}
	url := f.start(t)
	code, out, errOut := kcctl(t, "--server", url, "store", "switch", "--to", "mysql", "--dsn", secretDSN)
	if code != exitError {
		t.Errorf("exit %d", code)
	}
	if !strings.Contains(errOut, "Error: the switch from raft to mysql failed in phase copy: mysql: connection refused; raft stays the active backend") {
		t.Errorf("stderr %q", errOut)
	}
	if out != "" {
		t.Errorf("stdout %q", out)
	}
	noSecret(t, out, errOut)

	code, out, _ = kcctl(t, "--server", url, "store", "switch", "--to", "mysql", "-o", "yaml")
	if code != exitError || !strings.Contains(out, "state: failed") {
		t.Errorf("yaml: exit %d\n%s", code, out)
	}
}

// Errors of the request itself (a switch already running, a non-empty
// target) come back as the server words them, exit 1.
func TestStoreSwitchRefused(t *testing.T) {
	for status, msg := range map[int]string{
		http.StatusConflict:   "a store switch is already running (switch/sw0)",
		http.StatusBadRequest: "the target holds 12 keys: pass --force to remove them",
	} {
		f := &fakeStore{switchStatus: status, switchErr: msg, statuses: []api.StoreStatus{{Backend: "raft"}}}
		url := f.start(t)
		code, _, errOut := kcctl(t, "--server", url, "store", "switch", "--to", "mysql", "--dsn", secretDSN)
		if code != exitError || !strings.Contains(errOut, msg) {
			t.Errorf("HTTP %d: exit %d, stderr %q", status, code, errOut)
		}
		if _, polls := f.counts(); polls != 0 {
			t.Errorf("HTTP %d: followed a switch that never started", status)
		}
	}
}

// shortSwitchWait makes store switch wait out refusals for total at most,
// pausing 10 ms at a time, for the test.
func shortSwitchWait(t *testing.T, total time.Duration) {
	saved := switchWait
	switchWait.total, switchWait.maxPause = total, 10*time.Millisecond
	t.Cleanup(func() { switchWait = saved })
}

const tidying = "activestore: the new leader is still tidying up what an earlier switch may have left; retry in a moment"

// A refusal with Retry-After (a new leader tidying up, leadership moving)
// is waited out: kcctl says so once and asks again, a dry run too.
func TestStoreSwitchWaitsOutATransientRefusal(t *testing.T) {
	shortSwitchWait(t, 10*time.Second)
	done := runningSwitch(api.PhaseDone, 1000)
	done.State = api.SwitchDone
	f := &fakeStore{refusals: 2, refusal: tidying, retryAfter: "1",
		switchAnswer: runningSwitch(api.PhaseCheck, 0), statuses: []api.StoreStatus{switchStatus("mysql", done)}}
	url := f.start(t)
	code, out, errOut := kcctl(t, "--server", url, "store", "switch", "--to", "mysql", "--dsn", secretDSN)
	if code != 0 || !strings.HasPrefix(out, "store switched from raft to mysql") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if n, _ := f.counts(); n != 3 {
		t.Errorf("%d switch requests, want 3", n)
	}
	if strings.Count(errOut, "Waiting:") != 1 || !strings.HasPrefix(errOut, "Waiting: "+tidying+"\n") {
		t.Errorf("stderr %q: want the wait said once, first", errOut)
	}
	noSecret(t, out, errOut)

	f.refusals, f.requests = 1, nil
	f.switchAnswer = api.StoreSwitch{ID: "dry", From: "raft", To: "mysql", State: api.SwitchDryRun, Total: 7}
	code, out, errOut = kcctl(t, "--server", url, "store", "switch", "--to", "mysql", "--dry-run")
	if code != 0 || !strings.Contains(out, "would copy 7 keys") || errOut != "Waiting: "+tidying+"\n" {
		t.Errorf("dry run: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if n, _ := f.counts(); n != 2 || !f.requests[1].DryRun {
		t.Errorf("dry run: %d requests, %+v", n, f.requests)
	}
}

// A 409 without Retry-After (a switch already running) fails at once, and
// kcctl waits for nothing.
func TestStoreSwitchRunningIsNotWaitedOut(t *testing.T) {
	shortSwitchWait(t, 10*time.Second)
	msg := "activestore: a store switch is already running"
	f := &fakeStore{refusals: 1 << 20, refusal: msg, statuses: []api.StoreStatus{{Backend: "raft"}}}
	url := f.start(t)
	code, _, errOut := kcctl(t, "--server", url, "store", "switch", "--to", "mysql")
	if code != exitError || errOut != "Error: "+msg+" (HTTP 409)\n" {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	if n, polls := f.counts(); n != 1 || polls != 0 {
		t.Errorf("%d switch requests, %d polls; want 1, 0", n, polls)
	}
}

// The wait is bounded: once the bound has passed, the last refusal is the
// error; and ending the command's context ends the wait.
func TestStoreSwitchWaitIsBounded(t *testing.T) {
	shortSwitchWait(t, 200*time.Millisecond)
	f := &fakeStore{refusals: 1 << 20, refusal: tidying, retryAfter: "1", statuses: []api.StoreStatus{{Backend: "raft"}}}
	url := f.start(t)
	start := time.Now()
	code, _, errOut := kcctl(t, "--server", url, "store", "switch", "--to", "mysql")
	took := time.Since(start)
	if code != exitError || errOut != "Waiting: "+tidying+"\nError: "+tidying+" (HTTP 409)\n" {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	if n, _ := f.counts(); n < 2 {
		t.Errorf("%d switch requests: not asked again", n)
	}
	if took < 200*time.Millisecond || took > 5*time.Second {
		t.Errorf("gave up after %v; the bound is 200ms", took)
	}

	// The bound far off: the context's end stops the wait.
	shortSwitchWait(t, time.Hour)
	f = &fakeStore{refusals: 1 << 20, refusal: tidying, retryAfter: "1", statuses: []api.StoreStatus{{Backend: "raft"}}}
	url = f.start(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go cancelWhen(ctx, cancel, func() bool { n, _ := f.counts(); return n >= 2 })
	var out, errBuf strings.Builder
	code = run(ctx, []string{"--server", url, "store", "switch", "--to", "mysql"}, &out, &errBuf)
	if code != exitInterrupted {
		t.Errorf("interrupted: exit %d, stderr %q", code, errBuf.String())
	}
}

// A dry run prints what would be copied and the warnings, and follows
// nothing; --no-wait returns once the switch started.
func TestStoreSwitchDryRunAndNoWait(t *testing.T) {
	f := &fakeStore{
		switchAnswer: api.StoreSwitch{ID: "dry", From: "raft", To: "postgres", State: api.SwitchDryRun, Total: 4321,
			Warnings: []string{"the target holds 3 keys: a switch needs --force"}},
		statuses: []api.StoreStatus{{Backend: "raft"}},
	}
	url := f.start(t)
	code, out, errOut := kcctl(t, "--server", url, "store", "switch", "--to", "postgres", "--dsn", secretDSN, "--dry-run")
	if code != 0 || out != "dry run: a switch from raft to postgres would copy 4321 keys; nothing changed\n" ||
		errOut != "Warning: the target holds 3 keys: a switch needs --force\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if n, _ := f.counts(); n != 1 || !f.requests[0].DryRun {
		t.Errorf("%d requests, %+v: not one dry run", n, f.requests)
	}
	code, out, _ = kcctl(t, "--server", url, "store", "switch", "--to", "postgres", "--dry-run", "-o", "json")
	var sw api.StoreSwitch
	if code != 0 || json.Unmarshal([]byte(out), &sw) != nil || sw.Total != 4321 || len(sw.Warnings) != 1 {
		t.Errorf("json: exit %d, %s", code, out)
	}

	f.switchAnswer = runningSwitch(api.PhaseCheck, 0)
	code, out, _ = kcctl(t, "--server", url, "store", "switch", "--to", "mysql", "--no-wait")
	if code != 0 || out != "switch/sw1 started: raft → mysql; follow it with 'kcctl store status'\n" {
		t.Errorf("no-wait: exit %d, stdout %q", code, out)
	}
	code, out, _ = kcctl(t, "--server", url, "store", "switch", "--to", "mysql", "--no-wait", "-o", "name")
	if code != 0 || out != "switch/sw1\n" {
		t.Errorf("no-wait -o name: exit %d, stdout %q", code, out)
	}
	if _, polls := f.counts(); polls != 0 {
		t.Errorf("polled the status %d times", polls)
	}
}

func TestStoreStatus(t *testing.T) {
	st := api.StoreStatus{Backend: "mysql", Settings: map[string]string{"dsn": "kcd:*****@tcp(db:3306)/kcd"}, Healthy: true,
		LatencyMillis: 2, Revision: 9, Backends: backends}
	f := &fakeStore{statuses: []api.StoreStatus{st}}
	url := f.start(t)
	out := ok(t, url, "store", "status")
	for _, want := range []string{"Backend:       mysql\n", "Settings:      dsn=kcd:*****@tcp(db:3306)/kcd\n", "healthy (a read took 2ms)", "Last switch:   <none>\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	var got api.StoreStatus
	decode(t, ok(t, url, "store", "status", "-o", "json"), &got)
	if got.Backend != "mysql" || got.Revision != 9 {
		t.Errorf("json: %+v", got)
	}
	if out := ok(t, url, "store", "status", "-o", "name"); out != "store/mysql\n" {
		t.Errorf("name: %q", out)
	}
}

// --to completes with the backends the server can open, or the built-in
// ones when it cannot be asked.
func TestStoreSwitchCompletion(t *testing.T) {
	f := &fakeStore{statuses: []api.StoreStatus{{Backend: "raft", Backends: []string{"mysql", "postgres", "raft", "tikv"}}}}
	url := f.start(t)
	complete := func(server, prefix string) []string {
		_, out, _ := kcctl(t, "--server", server, "__complete", "store", "switch", "--to", prefix)
		var names []string
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if !strings.HasPrefix(l, ":") {
				names = append(names, l)
			}
		}
		return names
	}
	if got := complete(url, ""); !slices.Equal(got, []string{"mysql", "postgres", "raft", "tikv"}) {
		t.Errorf("from the server: %q", got)
	}
	if got := complete(url, "t"); !slices.Equal(got, []string{"tikv"}) {
		t.Errorf("prefix t: %q", got)
	}
	if got := complete("http://127.0.0.1:1", ""); !slices.Equal(got, defaultBackends) {
		t.Errorf("server down: %q", got)
	}
}

// Interrupting kcctl while it follows exits 130 and says that the switch
// goes on.
func TestStoreSwitchInterrupted(t *testing.T) {
	f := &fakeStore{switchAnswer: runningSwitch(api.PhaseCheck, 0),
		statuses: []api.StoreStatus{switchStatus("raft", runningSwitch(api.PhaseCopy, 10))}}
	url := f.start(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go cancelWhen(ctx, cancel, func() bool { _, polls := f.counts(); return polls >= 2 })
	var out, errOut strings.Builder
	code := run(ctx, []string{"--server", url, "store", "switch", "--to", "mysql"}, &out, &errOut)
	if code != exitInterrupted || !strings.Contains(errOut.String(), "goes on in the cluster") {
		t.Errorf("exit %d, stderr %q", code, errOut.String())
	}
}

// cancelWhen calls cancel once cond holds (looked at every 10 ms), or
// returns when ctx ends.
func cancelWhen(ctx context.Context, cancel func(), cond func() bool) {
	for !cond() {
		select {
		case <-ctx.Done():
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
	cancel()
}
