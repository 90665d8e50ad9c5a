package main

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// A result is one line of Go benchmark output: BenchmarkX/sub-N iters v unit v unit ...
type result struct {
	fn    string // BenchmarkX
	sub   string // sub-benchmark path without the -N suffix, "" for none
	procs int    // the -N suffix (GOMAXPROCS), 0 when absent
	iters int64
	vals  []metric
}

type metric struct {
	unit string
	v    float64
}

var procsSuffix = regexp.MustCompile(`-(\d+)$`)

// splitName splits "BenchmarkX/a=1/b-2" into BenchmarkX, a=1/b and 2.
func splitName(name string) (fn, sub string, procs int) {
	if m := procsSuffix.FindStringSubmatch(name); m != nil {
		procs, _ = strconv.Atoi(m[1])
		name = strings.TrimSuffix(name, m[0])
	}
	fn, sub, _ = strings.Cut(name, "/")
	return fn, sub, procs
}

// parseResult parses one benchmark line.
func parseResult(line string) (result, error) {
	f := strings.Fields(line)
	if len(f) < 4 || (len(f)-2)%2 != 0 {
		return result{}, fmt.Errorf("%d fields, want a name, iterations and value-unit pairs", len(f))
	}
	var r result
	r.fn, r.sub, r.procs = splitName(f[0])
	n, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return result{}, fmt.Errorf("iterations %q: %w", f[1], err)
	}
	r.iters = n
	for i := 2; i+1 < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return result{}, fmt.Errorf("value %q: %w", f[i], err)
		}
		r.vals = append(r.vals, metric{unit: f[i+1], v: v})
	}
	return r, nil
}

// rawFile is what the report takes from one NAME.txt.
type rawFile struct {
	name    string   // file name
	lines   []string // all lines, bounded by maxLines
	results []result
	skipped []string // notes on malformed benchmark lines
	failed  string   // the first failure line, "" if none
	tables  []string // markdown tables printed in the output, with their load-average line
}

// Bounds on what is read from one raw file: the outputs are small; a runaway
// log is cut, not read whole.
const (
	maxLines    = 200_000
	maxLineSize = 1 << 20
)

var (
	failLine   = regexp.MustCompile(`^(\s*--- FAIL|FAIL\b|panic:|fatal error:)`)
	failDetail = regexp.MustCompile(`^\s+\S+_test\.go:\d+: `)
)

// readRaw reads and parses a raw output file.
func readRaw(path, name string) (*rawFile, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	rf := &rawFile{name: name}
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 64<<10), maxLineSize)
	for sc.Scan() {
		if len(rf.lines) == maxLines {
			rf.skipped = append(rf.skipped, fmt.Sprintf("%s: read only its first %d lines", name, maxLines))
			break
		}
		rf.lines = append(rf.lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		rf.skipped = append(rf.skipped, fmt.Sprintf("%s: read up to line %d: %v", name, len(rf.lines), err))
	}
	rf.parse()
	return rf, nil
}

var benchLine = regexp.MustCompile(`^Benchmark\S*`)

func (rf *rawFile) parse() {
	for i := 0; i < len(rf.lines); i++ {
		l := rf.lines[i]
		switch {
		case benchLine.MatchString(l):
			f := strings.Fields(l)
			// A benchmark that prints while it runs can leave its name alone on a
			// line, or followed by what it printed, the figures following on a
			// later line.
			if len(f) == 1 || !isInt(f[1]) {
				if j := rf.figuresAfter(i); j > 0 {
					l = f[0] + " " + rf.lines[j]
					i = j
				}
			}
			r, err := parseResult(l)
			if err != nil {
				rf.skipped = append(rf.skipped, fmt.Sprintf("%s line %d skipped (%v): %s", rf.name, i+1, err, clip(l, 120)))
				continue
			}
			rf.results = append(rf.results, r)
		case strings.HasPrefix(l, "|"):
			j := i
			for j < len(rf.lines) && strings.HasPrefix(rf.lines[j], "|") {
				j++
			}
			t := strings.Join(rf.lines[i:j], "\n") + "\n"
			// The sheet prints the load averages after a blank line.
			for k := j; k < len(rf.lines) && k <= j+1; k++ {
				if strings.HasPrefix(rf.lines[k], "Load average") {
					t += "\n" + rf.lines[k] + "\n"
					j = k + 1
					break
				}
			}
			if j-i >= 2 {
				rf.tables = append(rf.tables, t)
			}
			i = j - 1
		case rf.failed == "" && failLine.MatchString(l):
			rf.failed = strings.TrimSpace(l)
			// The reason is the first test log line after it.
			for j := i + 1; j < len(rf.lines) && j <= i+5; j++ {
				if failDetail.MatchString(rf.lines[j]) {
					rf.failed += ": " + strings.TrimSpace(rf.lines[j])
					break
				}
			}
		}
	}
}

func isInt(s string) bool {
	_, err := strconv.ParseInt(s, 10, 64)
	return err == nil
}

var figuresLine = regexp.MustCompile(`^\s+\d+\s+[-+0-9.eE]+ \S`)

// figuresAfter finds the line holding the figures of a benchmark whose name
// stands alone on line i: the next line that starts with iterations and a
// value; 0 if another benchmark comes first.
func (rf *rawFile) figuresAfter(i int) int {
	for j := i + 1; j < len(rf.lines); j++ {
		if benchLine.MatchString(rf.lines[j]) {
			return 0
		}
		if figuresLine.MatchString(rf.lines[j]) {
			return j
		}
	}
	return 0
}

// matching returns the lines that match re, in order.
func (rf *rawFile) matching(re *regexp.Regexp) []string {
	var out []string
	for _, l := range rf.lines {
		if re.MatchString(l) {
			out = append(out, l)
		}
	}
	return out
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// readKV reads "key: value" lines (run-start.txt, run-end.txt); a missing
// file is an empty map.
func readKV(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	kv := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(l, ":")
		if ok && k != "" && !strings.ContainsAny(k, " \t") {
			kv[k] = strings.TrimSpace(v)
		}
	}
	return kv, nil
}

// A runRecord is one line of runs.tsv: NAME, exit code, load average before,
// the arguments run.sh gave.
type runRecord struct {
	name string
	rc   string
	load string
	args string
}

func readRuns(path string) (map[string]runRecord, []string, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return map[string]runRecord{}, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	runs := map[string]runRecord{}
	var notes []string
	for i, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		if l == "" {
			continue
		}
		f := strings.SplitN(l, "\t", 4)
		if len(f) < 3 {
			notes = append(notes, fmt.Sprintf("runs.tsv line %d skipped: %s", i+1, clip(l, 120)))
			continue
		}
		r := runRecord{name: f[0], rc: f[1], load: f[2]}
		if len(f) == 4 {
			r.args = f[3]
		}
		runs[r.name] = r
	}
	return runs, notes, nil
}
