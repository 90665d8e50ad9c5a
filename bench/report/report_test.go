package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/run.golden.md")

// testdata/run holds the raw output of a run: the side-by-side benchmarks
// of a make bench QUICK=1, the benchmarks of kcd alone run at small sizes
// (runs.tsv has their arguments), javahost-hop.sh's output, and the
// run-start/run-end records.

// copyRun copies testdata/run into a temporary directory the test may change.
func copyRun(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	des, err := os.ReadDir("testdata/run")
	if err != nil {
		t.Fatal(err)
	}
	for _, de := range des {
		b, err := os.ReadFile(filepath.Join("testdata/run", de.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, de.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func mustContain(t *testing.T, doc string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(doc, w) {
			t.Errorf("the document lacks %q", w)
		}
	}
}

func mustNotContain(t *testing.T, doc string, bad ...string) {
	t.Helper()
	for _, b := range bad {
		if strings.Contains(doc, b) {
			t.Errorf("the document holds %q", b)
		}
	}
}

func TestReportOfAFullRun(t *testing.T) {
	dir := copyRun(t)
	doc, err := render(dir, "testdata/gaps.md", dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile("testdata/run.golden.md", []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	golden, err := os.ReadFile("testdata/run.golden.md")
	if err != nil {
		t.Fatal(err)
	}
	if doc != string(golden) {
		t.Errorf("the document differs from testdata/run.golden.md (go test -run %s -update rewrites it)", t.Name())
	}

	// The header.
	mustContain(t, doc,
		"| when | 2026-12-04 14:58:30 UTC → 2026-12-04 16:27:10 UTC |",
		"| tree | ca6d9a5141f3 |",
		"| machine | 2 CPUs (AMD EPYC), 23.5 GiB memory, Linux 6.18.44-fc-v1147 |",
		"| TMPDIR (data dirs) | /tmp on ext2/3/4 |",
		"| Go | go1.26.8 |",
		`| Java | openjdk version "17.0.15" 2025-04-15 |`,
		"| Kafka (the test environment's broker) | 4.4.0",
		"| Kafka Connect (the worker the side-by-side benchmarks start) | 4.3.1",
		"at the start 0.29 1.62 2.65; at the end 3.10 4.02 3.55",
	)
	// Every side-by-side table, once, with its settings.
	for _, row := range []string{
		"| FileStreamSink, 4 task(s): records/s, first line → last | rec/s | 1,221,056 |",
		"| restart with 20 connectors → all RUNNING | s | 0.96 |",
		"| MirrorSource: records/s, first record → last | rec/s | 56,289 |",
		"| MirrorSource: records/s, first record → last | rec/s | 84,299 |",
		"| failover: kill -9 of a worker → all its tasks RUNNING elsewhere (Kafka Connect: scheduled.rebalance.max.delay.ms 0) | s | 3.61 |",
		"| a worker joins: its exec → it runs a third of the tasks | s | 0.58 |",
	} {
		if n := strings.Count(doc, row); n != 1 {
			t.Errorf("%d times in the document, want once: %q", n, row)
		}
	}
	mustContain(t, doc,
		"### FileStream source and sink",
		"### Kafka Connect's Java plugins, exactly-once source support enabled",
		"### Kafka Connect's Java plugins, exactly-once source support disabled",
		"### Failover of a worker",
		"### A worker joins",
		"Settings: `-test.bench ^BenchmarkFileStreamSideBySide$ -test.benchtime 1x -bench.filestream.rounds 1",
		"Load average at the start of each round: 0.29 1.62 2.65",
	)
	// Every benchmark of kcd alone, as a table of its figures.
	mustContain(t, doc,
		"| | iterations | µs/op | cpu-µs/write | disk-flush-ms | p50-ms | p99-ms | writes/s |",
		"| writers=128 | 300 | 48.4 | 40.1 | 0.446 | 4.88 | 6.45 | 20,682 |",
		"`BenchmarkWrites`, GOMAXPROCS 6:",
		"| writers=64 | 300 | 60.3 | 64.5 | 0.557 | 2.77 | 7.34 | 16,606 |",
		"per acknowledged write, 3 nodes together: 0.51 fdatasync + 0.023 fsync (0.18 per node), 1.0 pwrite64.",
		"| writers=64 | 2,000 | 84.3 |",
		"| backend=raft/commit/committers=16 | 30 | 0.265 | 3,768 |",
		"| backend=postgres/load | 30 | 39.0 |", // its name and figures on two lines
		"postgres: fsync=off, synchronous_commit=off",
		"| raft-postgres-hold-ms | 19.6 |",
		"raft-postgres: switch 68b7344de681 done: 2095 of 2095 keys copied",
		"| BenchmarkFailover | 2 | 567 | 509 | 614 | 623 | 505 | 623 | 0 | 2 |",
		"| BenchmarkIdleRSS | 1 | 2.79 | 27.0 | 27.0 | 26.5 |",
		"node 2 (without broker): VmRSS 27.0 MB, VmHWM 27.0 MB",
		"| unit | node=worker |",
		"| unit | node=raft-only |",
		"migrate: every connector and task PAUSED in kcd 0.03 s after the commit answered",
		"| BenchmarkTaskFailover | 1 | 3.53 | 1 | 0 | 3,525 | 3,525 | 3,525 | 0 | 0 |",
		"`BenchmarkHostSourcePoll`, GOMAXPROCS 2:",
		"| batch=1000 | 1,990 | 2,582 | 1,598 | 899 | 2,582 | 2.58 |",
		"sink put     1000        2581899           75014        2506885          2507       899      1598        42",
		"| scratch-one-connector | 3 | 36.7 | 10,500 | 1.89 | 63 |",
	)
	// How to run, the hand-written gaps, and nothing missing.
	mustContain(t, doc,
		"## How to run",
		"make bench QUICK=1",
		"BENCH_ROUNDS=5 make bench",
		"go test -run '^$' -bench '^BenchmarkWrites$' -benchtime 5s ./bench",
		"## Where the targets are missed\n\nTest gaps: start-up",
		"### Start-up", // demoted from ## in gaps.md
	)
	mustNotContain(t, doc, "not run:", "Failed", "skipped (", "## Notes on the raw output")
}

func TestReportShowsWhatDidNotRun(t *testing.T) {
	dir := copyRun(t)
	for _, f := range []string{"taskfailover.txt", "rebalance-sbs.txt"} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	// A switch that failed before any figure, as go test prints it.
	failed := "bench: store loaded in 163ms: 20 connectors, 2000 offset keys\n" +
		"--- FAIL: BenchmarkStoreSwitch\n" +
		"    storeswitch_test.go:258: raft-postgres: failed three times: switch aborted: verify: 3 keys differ\n" +
		"FAIL\n"
	write(t, dir, "storeswitch.txt", failed)
	runs, err := os.ReadFile(filepath.Join(dir, runsFile))
	if err != nil {
		t.Fatal(err)
	}
	runs = []byte(strings.Replace(string(runs), "storeswitch\t0\t", "storeswitch\t1\t", 1))
	write(t, dir, runsFile, string(runs))
	// A malformed line among good ones, a table the report does not know,
	// a file it does not know, and one from an earlier run.
	writes, err := os.ReadFile(filepath.Join(dir, "writes.txt"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, dir, "writes.txt", string(writes)+"BenchmarkWrites/writers=256-2  300  12 ns/op 7\n")
	write(t, dir, "startup-defaults-sidebyside.md", "| metric | unit | kcd best |\n|---|---|--:|\n| start → REST | s | 0.01 |\n")
	// The failover table again, as a later benchmark may write it.
	fo, err := os.ReadFile(filepath.Join(dir, "failover-sbs.txt"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, dir, "failover-sidebyside.md", string(fo[strings.Index(string(fo), "| metric"):strings.Index(string(fo), "goos:")]))
	write(t, dir, "notes.log", "something\n")
	write(t, dir, "old.txt", "BenchmarkOld-2 1 5 ns/op\n")
	old := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	if err := os.Chtimes(filepath.Join(dir, "old.txt"), old, old); err != nil {
		t.Fatal(err)
	}

	doc, err := render(dir, filepath.Join(dir, "no-gaps.md"), dir, false)
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, doc,
		"### A worker joins",
		"**not run: see rebalance-sbs.txt** (the run left no such file).",
		"### Task failover (BenchmarkTaskFailover)",
		"**not run: see taskfailover.txt** (the run left no such file).",
		"**Failed:** exit code 1, `--- FAIL: BenchmarkStoreSwitch: storeswitch_test.go:258: raft-postgres: failed three times",
		"**not run: see storeswitch.txt** (it holds no figures).",
		"writes.txt line 12 skipped (5 fields, want a name, iterations and value-unit pairs): BenchmarkWrites/writers=256-2",
		"| writers=128 | 300 | 48.4 |", // the good lines stay
		"### startup-defaults-sidebyside",
		"| start → REST | s | 0.01 |",
		"Files of the run this document does not show: `notes.log`.",
		"Files from an earlier run in the same directory, left out: `old.txt`.",
	)
	mustNotContain(t, doc, "BenchmarkOld", "## Where the targets are missed", "### failover-sidebyside")
}

func TestReportOfAQuickRun(t *testing.T) {
	dir := copyRun(t)
	for _, f := range []string{"writes.txt", "writes-3sched.txt", "fsyncs.txt", "fsyncs.perf", "fsyncs-per-write.txt",
		"stores.txt", "storeswitch.txt", "failover.txt", "memory.txt", "migrate.txt", "migrate-raftonly.txt",
		"taskfailover.txt", "javahost-hop.txt", "assign.txt", startFile, endFile, runsFile} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	doc, err := render(dir, "testdata/gaps.md", dir, true)
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, doc,
		"in QUICK mode",
		"| FileStreamSink, 4 task(s): records/s, first line → last | rec/s | 1,221,056 |",
		"| a worker joins: its exec → it runs a third of the tasks | s | 0.58 |",
		"QUICK mode runs only the side-by-side benchmarks; not run: writes, writes-3sched, fsyncs, stores,",
		"The run did not record its tree, machine and versions (no run-start.txt)",
		"| when | not recorded; its files were written ",
		"Settings: not recorded (no line of runs.tsv for it).",
	)
	mustNotContain(t, doc, "not run: see", "### Metadata writes")
}

// TestStartRecordsTheMachine runs the start step as run.sh does.
func TestStartRecordsTheMachine(t *testing.T) {
	dir := t.TempDir()
	if err := run(dir, "", "", ".", true, true); err != nil {
		t.Fatal(err)
	}
	kv, err := readKV(filepath.Join(dir, startFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"time", "loadavg", "commit", "cpus", "cpu", "memory", "kernel", "tmpdir", "go", "java", "kafka", "connect"} {
		if kv[k] == "" {
			t.Errorf("%s: no %s", startFile, k)
		}
	}
	if kv["mode"] != "quick" {
		t.Errorf("mode %q, want quick", kv["mode"])
	}
	if _, err := time.Parse(time.RFC3339, kv["time"]); err != nil {
		t.Errorf("time: %v", err)
	}
}

func TestParseResult(t *testing.T) {
	r, err := parseResult("BenchmarkMigrateImport/node=raft-only-2   1  270406282 ns/op  27.28 apply-alloc-MB")
	if err != nil {
		t.Fatal(err)
	}
	if r.fn != "BenchmarkMigrateImport" || r.sub != "node=raft-only" || r.procs != 2 || r.iters != 1 ||
		len(r.vals) != 2 || r.vals[1] != (metric{"apply-alloc-MB", 27.28}) {
		t.Errorf("parsed %+v", r)
	}
	for _, bad := range []string{"BenchmarkX-2 1 5", "BenchmarkX-2 x 5 ns/op", "BenchmarkX-2 1 five ns/op"} {
		if _, err := parseResult(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestScaleAndFormat(t *testing.T) {
	for _, c := range []struct {
		unit  string
		v     []float64
		want  string
		scale float64
	}{
		{"ns/op", []float64{1195588, 50492, 48418}, "µs/op", 1e3},
		{"ns/op", []float64{30947453442}, "s/op", 1e9},
		{"ns/batch", []float64{385391}, "µs/batch", 1e3},
		{"ns/op", []float64{46}, "ns/op", 1},
		{"B/op", []float64{1884562}, "MB/op", 1e6},
		{"writes/s", []float64{19864}, "writes/s", 1},
	} {
		if u, s := scaleUnit(c.unit, c.v); u != c.want || s != c.scale {
			t.Errorf("scaleUnit(%s, %v) = %s, %g; want %s, %g", c.unit, c.v, u, s, c.want, c.scale)
		}
	}
	for v, want := range map[float64]string{0: "0", 3: "3", 20682: "20,682", 1060758.4: "1,060,758", 517.8: "518",
		29.65: "29.6", 2.091: "2.09", 0.6392: "0.639", 3e-7: "3e-07", -1500: "-1,500"} {
		if got := fmtNum(v); got != want {
			t.Errorf("fmtNum(%v) = %s, want %s", v, got, want)
		}
	}
}

func write(t *testing.T, dir, name, s string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}
