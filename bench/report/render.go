package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// notebook is the history of the experiments, linked from the document.
const notebook = "notes/benchmarks-lab-notebook-2026-12.md"

// report is the state of one rendering.
type report struct {
	in       string
	b        strings.Builder
	start    map[string]string
	end      map[string]string
	runs     map[string]runRecord
	quick    bool
	entries  map[string]os.FileInfo // fresh files of this run, by name
	stale    []string               // files older than the run's start
	used     map[string]bool        // files the document has shown
	raw      map[string]*rawFile
	notes    []string
	usedText map[string]bool // tables already shown, to skip their copies in NAME.txt
}

// render builds the document from the files in dir in. gaps is a
// hand-written markdown file included when it exists; root is where the
// machine's details are looked up when the run did not record them; quick
// says the run was in QUICK mode when run-start.txt does not.
func render(in, gaps, root string, quick bool) (string, error) {
	r := &report{in: in, used: map[string]bool{}, raw: map[string]*rawFile{}, usedText: map[string]bool{}, entries: map[string]os.FileInfo{}}
	var err error
	if r.start, err = readKV(filepath.Join(in, startFile)); err != nil {
		return "", err
	}
	if r.end, err = readKV(filepath.Join(in, endFile)); err != nil {
		return "", err
	}
	var notes []string
	if r.runs, notes, err = readRuns(filepath.Join(in, runsFile)); err != nil {
		return "", err
	}
	r.notes = append(r.notes, notes...)
	r.quick = quick || r.start["mode"] == "quick"
	if err := r.list(); err != nil {
		return "", err
	}

	r.header(root)
	r.sideBySide()
	r.alone()
	r.howTo()
	if err := r.gaps(gaps); err != nil {
		return "", err
	}
	r.leftovers()
	return r.b.String(), nil
}

func (r *report) p(format string, args ...any) { fmt.Fprintf(&r.b, format, args...) }

// list reads the directory; a file last written before the run started is
// from an earlier run in the same directory and is left out.
func (r *report) list() error {
	des, err := os.ReadDir(r.in)
	if err != nil {
		return err
	}
	var since time.Time
	if t, err := time.Parse(time.RFC3339, r.start["time"]); err == nil {
		since = t.Truncate(time.Second)
	}
	for _, de := range des {
		fi, err := de.Info()
		if err != nil {
			continue
		}
		name := de.Name()
		if strings.HasSuffix(name, ".tmp") {
			continue
		}
		if !since.IsZero() && fi.ModTime().Before(since) && !auxiliary[name] {
			r.stale = append(r.stale, name)
			continue
		}
		r.entries[name] = fi
	}
	return nil
}

// rawOf returns the parsed NAME.txt, nil when the run has none.
func (r *report) rawOf(name string) *rawFile {
	file := name + ".txt"
	if rf, ok := r.raw[file]; ok {
		return rf
	}
	fi, ok := r.entries[file]
	if !ok || fi.IsDir() {
		return nil
	}
	rf, err := readRaw(filepath.Join(r.in, file), file)
	if err != nil {
		r.notes = append(r.notes, fmt.Sprintf("%s: %v", file, err))
		return nil
	}
	r.notes = append(r.notes, rf.skipped...)
	r.raw[file] = rf
	return rf
}

func (r *report) header(root string) {
	r.p("# Benchmarks\n\n")
	r.p("The figures of one `make bench` run")
	if r.quick {
		r.p(" in QUICK mode (`make bench QUICK=1`: the side-by-side benchmarks only, one round at small sizes)")
	}
	r.p(", written by `bench/report` from the run's raw output and nothing else; ")
	r.p("[How to run](#how-to-run) says how to make them again. The experiments that led here, with the figures ")
	r.p("of their day, are in [%s](%s).\n\n", notebook, notebook)

	kv := r.start
	probed := false
	if kv["commit"] == "" {
		kv = probe(root, true)
		probed = true
	}
	r.p("## The run\n\n| | |\n|---|---|\n")
	when := "not recorded"
	if s := r.start["time"]; s != "" {
		when = clock(s) + " → " + clock(r.end["time"])
	} else if first, last, ok := r.fileTimes(); ok {
		when = "not recorded; its files were written " + first.UTC().Format("2006-01-02 15:04") + "–" + last.UTC().Format("15:04") + " UTC"
	}
	r.p("| when | %s |\n", when)
	tree := kv["commit"]
	if kv["dirty"] == "true" {
		tree += ", with uncommitted changes (dirty)"
	}
	r.p("| tree | %s |\n", tree)
	r.p("| machine | %s CPUs (%s), %s memory, Linux %s |\n", kv["cpus"], kv["cpu"], kv["memory"], kv["kernel"])
	r.p("| TMPDIR (data dirs) | %s |\n", kv["tmpdir"])
	r.p("| Go | %s |\n", kv["go"])
	r.p("| Java | %s |\n", kv["java"])
	r.p("| Kafka (the test environment's broker) | %s |\n", kv["kafka"])
	r.p("| Kafka Connect (the worker the side-by-side benchmarks start) | %s |\n", kv["connect"])
	load := "not recorded"
	if s := r.start["loadavg"]; s != "" {
		load = "at the start " + s + "; at the end " + orUnknown(r.end["loadavg"])
	}
	r.p("| load average (1, 5, 15 min) | %s |\n", load)
	if probed {
		r.p("\nThe run did not record its tree, machine and versions (no %s): the table shows them as they were when "+
			"this document was written.\n", startFile)
	}
	r.p("\nThe machine may be shared with other work: compare figures within one run, and rerun `make bench` on the " +
		"hardware that matters.\n\n")
}

func clock(s string) string {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return orUnknown(s)
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// fileTimes is the first and last time a file of the run was written.
func (r *report) fileTimes() (first, last time.Time, ok bool) {
	for name, fi := range r.entries {
		if fi.IsDir() || auxiliary[name] {
			continue
		}
		t := fi.ModTime()
		if !ok || t.Before(first) {
			first = t
		}
		if !ok || t.After(last) {
			last = t
		}
		ok = true
	}
	return first, last, ok
}

func (r *report) sideBySide() {
	r.p("## kcd and Kafka Connect side by side\n\n")
	r.p("Each scenario runs on kcd and on a real Kafka Connect worker in alternating rounds, on the same machine, " +
		"broker and database. Each table gives the best and the median of each side, and how many times better " +
		"kcd's median is (above 1: kcd is better, whichever way better points for the metric); samples are kcd / " +
		"Kafka Connect.\n\n")
	for _, s := range sideBySides {
		r.p("### %s\n\n%s\n\n", s.title, s.about)
		r.settings(s.raw)
		rf := r.rawOf(s.raw)
		if rf != nil {
			r.used[rf.name] = true
		}
		table := r.readTable(s.table)
		if table == "" && rf != nil && len(rf.tables) > 0 {
			table = strings.Join(rf.tables, "\n")
		}
		if fail := r.failure(s.raw, rf); fail != "" {
			r.p("**Failed:** %s\n\n", fail)
		}
		if table == "" {
			r.notRun(s.raw, rf, s.full)
			continue
		}
		r.shown(table)
		r.p("%s\n", strings.TrimRight(table, "\n")+"\n")
	}

	// Tables the report does not know: *.md files, then tables printed in
	// other NAME.txt files.
	var others []string
	for name, fi := range r.entries {
		if !fi.IsDir() && strings.HasSuffix(name, ".md") && !auxiliary[name] && !r.used[name] {
			others = append(others, name)
		}
	}
	sort.Strings(others)
	for _, name := range others {
		table := r.readTable(name)
		if table == "" || r.usedText[tableKey(table)] {
			continue
		}
		base := strings.TrimSuffix(name, ".md")
		r.p("### %s\n\nA table of `%s` (bench/report has no description of it).\n\n", base, name)
		// Its benchmark's output is NAME.txt, NAME the table's name without
		// "-sidebyside", unless that is a benchmark of kcd alone.
		if raw := strings.Replace(base, "-sidebyside", "", 1); !isSingle(raw) {
			r.settings(raw)
			if rf := r.rawOf(raw); rf != nil {
				r.used[rf.name] = true
			}
		}
		r.shown(table)
		r.p("%s\n", strings.TrimRight(table, "\n")+"\n")
	}
	for _, name := range r.sortedTxt() {
		rf := r.rawOf(strings.TrimSuffix(name, ".txt"))
		if rf == nil || r.used[name] {
			continue
		}
		var fresh []string
		for _, t := range rf.tables {
			if !r.usedText[tableKey(t)] {
				fresh = append(fresh, t)
			}
		}
		if len(rf.tables) > 0 {
			// Its tables are shown (here or above): it is a side-by-side
			// benchmark, whose Benchmark line is only its total time.
			r.used[name] = true
		}
		if len(fresh) == 0 {
			continue
		}
		raw := strings.TrimSuffix(name, ".txt")
		r.p("### %s\n\nThe table printed in `%s` (bench/report has no description of it).\n\n", raw, name)
		r.settings(raw)
		for _, t := range fresh {
			r.shown(t)
			r.p("%s\n", strings.TrimRight(t, "\n")+"\n")
		}
	}
}

func isSingle(name string) bool {
	return slices.ContainsFunc(singles, func(s single) bool { return s.raw == name })
}

func (r *report) sortedTxt() []string {
	var out []string
	for name, fi := range r.entries {
		if !fi.IsDir() && strings.HasSuffix(name, ".txt") && !auxiliary[name] {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// readTable returns the contents of a table file of the run, "" when there
// is none.
func (r *report) readTable(name string) string {
	fi, ok := r.entries[name]
	if !ok || fi.IsDir() {
		return ""
	}
	r.used[name] = true
	if fi.Size() > 1<<20 {
		r.notes = append(r.notes, fmt.Sprintf("%s: %d bytes, too large for a table; not shown", name, fi.Size()))
		return ""
	}
	b, err := os.ReadFile(filepath.Join(r.in, name))
	if err != nil {
		r.notes = append(r.notes, fmt.Sprintf("%s: %v", name, err))
		return ""
	}
	return strings.TrimSpace(string(b)) + "\n"
}

// shown remembers the table lines of t, so that the same table printed in
// a NAME.txt is not shown twice.
func (r *report) shown(t string) { r.usedText[tableKey(t)] = true }

func tableKey(t string) string {
	var rows []string
	for _, l := range strings.Split(t, "\n") {
		if strings.HasPrefix(l, "|") {
			rows = append(rows, strings.TrimSpace(l))
		}
	}
	return strings.Join(rows, "\n")
}

// settings prints how run.sh ran NAME: its arguments and the load average
// before it.
func (r *report) settings(name string) {
	rec, ok := r.runs[name]
	if !ok {
		if _, ran := r.entries[name+".txt"]; ran {
			r.p("Settings: not recorded (no line of %s for it).\n\n", runsFile)
		}
		return
	}
	args := rec.args
	if args == "" {
		args = "(none)"
	}
	r.p("Settings: `%s`; load average before: %s.\n\n", args, rec.load)
}

// failure says why NAME failed: its exit code in runs.tsv, or a failure in
// its output; "" if it did not.
func (r *report) failure(name string, rf *rawFile) string {
	var why []string
	if rec, ok := r.runs[name]; ok && rec.rc != "0" && rec.rc != "" {
		why = append(why, "exit code "+rec.rc)
	}
	if rf != nil && rf.failed != "" {
		why = append(why, "`"+clip(rf.failed, 200)+"`")
	}
	if len(why) == 0 {
		return ""
	}
	return strings.Join(why, ", ") + "; see " + name + ".txt"
}

// notRun says a benchmark has no figures; quickSkips: QUICK mode does not
// run it.
func (r *report) notRun(name string, rf *rawFile, quickSkips bool) {
	switch {
	case rf == nil && quickSkips && r.quick:
		r.p("not run: QUICK mode does not run it.\n\n")
	case rf == nil:
		r.p("**not run: see %s.txt** (the run left no such file).\n\n", name)
	default:
		r.p("**not run: see %s.txt** (it holds no figures).\n\n", name)
	}
}

func (r *report) alone() {
	r.p("## kcd alone\n\n")
	var skipped []string
	for _, s := range singles {
		rf := r.rawOf(s.raw)
		if rf == nil && r.quick {
			skipped = append(skipped, s.raw)
			continue
		}
		r.p("### %s\n\n%s\n\n", s.title, s.about)
		r.settings(s.raw)
		if rf != nil {
			r.used[rf.name] = true
		}
		if fail := r.failure(s.raw, rf); fail != "" {
			r.p("**Failed:** %s\n\n", fail)
		}
		summary := s.raw == "fsyncs" && r.fsyncs()
		if rf == nil || len(rf.results) == 0 {
			if !summary {
				r.notRun(s.raw, rf, true)
			}
			continue
		}
		r.p("%s", benchTables(rf.results))
		if s.keep != nil {
			r.block(rf.matching(s.keep), "bench: ")
		}
		if s.after != "" {
			r.block(rf.after(s.after), "")
		}
	}
	if len(skipped) > 0 {
		r.p("QUICK mode runs only the side-by-side benchmarks; not run: %s.\n\n", strings.Join(skipped, ", "))
	}

	// Benchmarks the report does not know.
	for _, name := range r.sortedTxt() {
		if r.used[name] {
			continue
		}
		rf := r.rawOf(strings.TrimSuffix(name, ".txt"))
		if rf == nil || len(rf.results) == 0 {
			continue
		}
		r.used[name] = true
		raw := strings.TrimSuffix(name, ".txt")
		r.p("### %s\n\nThe benchmark lines of `%s` (bench/report has no description of it).\n\n", raw, name)
		r.settings(raw)
		if fail := r.failure(raw, rf); fail != "" {
			r.p("**Failed:** %s\n\n", fail)
		}
		r.p("%s", benchTables(rf.results))
	}
}

// fsyncs prints the per-write figures run.sh summed from perf's counts (or
// why it did not count), and reports whether there were any.
func (r *report) fsyncs() bool {
	const name = "fsyncs-per-write.txt"
	if _, ok := r.entries[name]; !ok {
		return false
	}
	b, err := os.ReadFile(filepath.Join(r.in, name))
	if err != nil {
		r.notes = append(r.notes, fmt.Sprintf("%s: %v", name, err))
		return false
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return false
	}
	r.p("%s.\n\n", strings.TrimSuffix(firstLine(s), "."))
	return true
}

// after returns the lines following the first one that starts with marker,
// the marker line included.
func (rf *rawFile) after(marker string) []string {
	for i, l := range rf.lines {
		if strings.HasPrefix(l, marker) {
			return rf.lines[i:]
		}
	}
	return nil
}

// block prints lines as a preformatted block, prefix cut from each.
func (r *report) block(lines []string, prefix string) {
	if len(lines) == 0 {
		return
	}
	r.p("```\n")
	for _, l := range lines {
		r.p("%s\n", strings.ReplaceAll(strings.TrimPrefix(l, prefix), "```", "'''"))
	}
	r.p("```\n\n")
}

func (r *report) howTo() {
	r.p("## How to run\n\n")
	r.p("From the repository's root, with the test environment up (`make testenv-up`: Kafka, the Kafka Connect " +
		"jars, MariaDB, PostgreSQL; `make javahost` for the Java host). Data dirs go to `$TMPDIR`, which must be " +
		"a disk, not tmpfs. Raw output goes to `$BENCH_OUT`; the full run writes this document to " +
		"docs/benchmarks.md, QUICK mode to `$BENCH_OUT/benchmarks.md` only.\n\n")
	r.p("```sh\n" +
		"make bench                              # everything (bench/run.sh): 25-35 minutes on 2 cores\n" +
		"make bench QUICK=1                      # the side-by-side benchmarks only, one round at small sizes: about 4 minutes\n" +
		"BENCH_ROUNDS=5 make bench               # alternating rounds of the side-by-side benchmarks (default 3)\n" +
		"BENCH_FAILOVER_TRIALS=100 make bench    # leader failover trials (default 30)\n" +
		"BENCH_TASK_FAILOVER_TRIALS=50 make bench  # task failover trials (default 20)\n" +
		"BENCH_WRITES_TIME=10s make bench        # each write run (default 5s)\n" +
		"BENCH_STORE_TIME=10s make bench         # each store backend run (default 3s)\n" +
		"BENCH_OUT=/some/dir make bench          # raw output elsewhere (default .data/bench)\n" +
		"go run ./bench/report -in .data/bench -out docs/benchmarks.md   # this document again from the raw output\n" +
		"```\n\n")
	r.p("One benchmark alone (the flags are listed by `go test ./bench -args -h`; `-benchtime 1x` runs one " +
		"iteration, or one trial):\n\n")
	r.p("```sh\n" +
		"go test -run '^$' -bench '^BenchmarkWrites$' -benchtime 5s ./bench\n" +
		"go test -run '^$' -bench '^BenchmarkFailover$' -benchtime 30x -timeout 15m ./bench\n" +
		"go test -run '^$' -bench '^BenchmarkFileStreamSideBySide$' -benchtime 1x -timeout 15m ./bench -args -bench.filestream.rounds 3\n" +
		"go test -run '^$' -bench '^BenchmarkJavaHostSideBySide$' -benchtime 1x -timeout 15m ./bench -args -bench.javahost.exactly-once disabled\n" +
		"go test -run '^$' -bench '^BenchmarkFailoverSideBySide$' -benchtime 1x -timeout 15m ./bench -args -bench.failover.connect-delays 0\n" +
		"go test -run '^$' -bench '^BenchmarkRebalanceSideBySide$' -benchtime 1x -timeout 15m ./bench\n" +
		"go test -run '^$' -bench '^BenchmarkStoreSwitch$' -benchtime 1x -timeout 15m ./bench -args -bench.switch-to postgres\n" +
		"go test -run '^$' -bench '^BenchmarkMigrateImport$/^node=worker$' -benchtime 1x ./bench\n" +
		"(cd daemon/coordinator/assignor && go test -run '^$' -bench '^BenchmarkAssign' -benchmem)\n" +
		"bench/javahost-hop.sh\n" +
		"```\n\n")
}

// gaps includes the hand-written notes, their headings moved below this
// document's.
func (r *report) gaps(path string) error {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("gaps: %w", err)
	}
	r.p("## Where the targets are missed\n\n")
	fence := false
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if strings.HasPrefix(l, "```") {
			fence = !fence
		}
		if !fence && strings.HasPrefix(l, "#") {
			l = "##" + l
		}
		r.p("%s\n", l)
	}
	r.p("\n")
	return nil
}

// leftovers lists what the report skipped or did not know.
func (r *report) leftovers() {
	var unknown []string
	for name, fi := range r.entries {
		if auxiliary[name] || r.used[name] {
			continue
		}
		if fi.IsDir() {
			name += "/"
		}
		unknown = append(unknown, name)
	}
	sort.Strings(unknown)
	sort.Strings(r.stale)
	if len(unknown) == 0 && len(r.stale) == 0 && len(r.notes) == 0 {
		return
	}
	r.p("## Notes on the raw output\n\n")
	if len(unknown) > 0 {
		r.p("Files of the run this document does not show: %s.\n\n", backquoted(unknown))
	}
	if len(r.stale) > 0 {
		r.p("Files from an earlier run in the same directory, left out: %s.\n\n", backquoted(r.stale))
	}
	for _, n := range r.notes {
		r.p("- %s\n", strings.ReplaceAll(n, "\n", " "))
	}
	if len(r.notes) > 0 {
		r.p("\n")
	}
}

func backquoted(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "`" + n + "`"
	}
	return strings.Join(q, ", ")
}

// benchTables renders Go benchmark results: one table per benchmark, a row
// per sub-benchmark and a column per unit; a benchmark of many units and
// few rows is turned on its side.
func benchTables(rs []result) string {
	var b strings.Builder
	var fns []string
	by := map[string][]result{}
	for _, r := range rs {
		if _, ok := by[r.fn]; !ok {
			fns = append(fns, r.fn)
		}
		by[r.fn] = append(by[r.fn], r)
	}
	for _, fn := range fns {
		rows := by[fn]
		var units []string
		var procs []string
		for _, r := range rows {
			for _, m := range r.vals {
				if !slices.Contains(units, m.unit) {
					units = append(units, m.unit)
				}
			}
			if p := strconv.Itoa(r.procs); r.procs > 0 && !slices.Contains(procs, p) {
				procs = append(procs, p)
			}
		}
		heads := make([]string, len(units))
		scales := make([]float64, len(units))
		for i, u := range units {
			heads[i], scales[i] = scaleUnit(u, column(rows, u))
		}
		cell := func(r result, i int) string {
			for _, m := range r.vals {
				if m.unit == units[i] {
					return fmtNum(m.v / scales[i])
				}
			}
			return "–"
		}
		label := func(r result) string {
			if r.sub == "" {
				return fn
			}
			return r.sub
		}
		fmt.Fprintf(&b, "`%s`", fn)
		if len(procs) > 0 {
			fmt.Fprintf(&b, ", GOMAXPROCS %s", strings.Join(procs, ", "))
		}
		b.WriteString(":\n\n")
		if len(units) > 8 && len(rows) <= 4 {
			b.WriteString("| unit |")
			for _, r := range rows {
				fmt.Fprintf(&b, " %s |", label(r))
			}
			b.WriteString("\n|---|" + strings.Repeat("--:|", len(rows)) + "\n| iterations |")
			for _, r := range rows {
				fmt.Fprintf(&b, " %s |", fmtNum(float64(r.iters)))
			}
			b.WriteString("\n")
			for i := range units {
				fmt.Fprintf(&b, "| %s |", heads[i])
				for _, r := range rows {
					fmt.Fprintf(&b, " %s |", cell(r, i))
				}
				b.WriteString("\n")
			}
		} else {
			fmt.Fprintf(&b, "| | iterations | %s |\n|---|--:|%s\n", strings.Join(heads, " | "), strings.Repeat("--:|", len(units)))
			for _, r := range rows {
				fmt.Fprintf(&b, "| %s | %s |", label(r), fmtNum(float64(r.iters)))
				for i := range units {
					fmt.Fprintf(&b, " %s |", cell(r, i))
				}
				b.WriteString("\n")
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

func column(rows []result, unit string) []float64 {
	var v []float64
	for _, r := range rows {
		for _, m := range r.vals {
			if m.unit == unit {
				v = append(v, math.Abs(m.v))
			}
		}
	}
	return v
}

// scaleUnit picks a readable unit for a column of nanoseconds or bytes,
// by its median: 1,195,588 ns/op reads 1.20 ms/op.
func scaleUnit(unit string, v []float64) (string, float64) {
	if len(v) == 0 {
		return unit, 1
	}
	v = slices.Clone(v)
	slices.Sort(v)
	med := v[len(v)/2]
	if rest, ok := strings.CutPrefix(unit, "ns/"); ok {
		switch {
		case med >= 1e9:
			return "s/" + rest, 1e9
		case med >= 1e6:
			return "ms/" + rest, 1e6
		case med >= 1e3:
			return "µs/" + rest, 1e3
		}
		return unit, 1
	}
	if rest, ok := strings.CutPrefix(unit, "B/"); ok {
		switch {
		case med >= 1e6:
			return "MB/" + rest, 1e6
		case med >= 1e3:
			return "kB/" + rest, 1e3
		}
	}
	return unit, 1
}

// fmtNum prints a figure with about three significant digits, thousands
// separated.
func fmtNum(v float64) string {
	a := math.Abs(v)
	switch {
	case v == 0:
		return "0"
	case a >= 1000 || (a >= 1 && v == math.Trunc(v)):
		s := strconv.FormatInt(int64(math.Round(a)), 10)
		var out []byte
		for i, c := range []byte(s) {
			if i > 0 && (len(s)-i)%3 == 0 {
				out = append(out, ',')
			}
			out = append(out, c)
		}
		if v < 0 {
			return "-" + string(out)
		}
		return string(out)
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}
