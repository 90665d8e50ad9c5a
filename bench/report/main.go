// Command report writes the markdown document of one make bench run
// (docs/benchmarks.md) from the raw outputs bench/run.sh leaves in
// $BENCH_OUT: NAME.txt of each benchmark, the side-by-side tables (*.md),
// runs.tsv (what run.sh ran, with which arguments and exit code) and the
// machine and versions recorded at the start and end of the run.
//
//	go run ./bench/report -in "$OUT" -start [-quick]   # at the start: writes $OUT/run-start.txt
//	go run ./bench/report -in "$OUT" -out FILE         # at the end: writes run-end.txt and FILE
//
// It reads only what is there: a benchmark without output shows as not run,
// a malformed line is skipped with a note, and a file it does not know is
// listed.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kcd-project/kcd/internal/fstype"
)

func main() {
	in := flag.String("in", ".data/bench", "the run's raw output directory ($BENCH_OUT)")
	out := flag.String("out", "", "the document to write (default: IN/benchmarks.md)")
	start := flag.Bool("start", false, "record the machine, versions and load average in IN/run-start.txt, and write nothing else")
	quick := flag.Bool("quick", false, "the run is make bench QUICK=1 (recorded by -start; given later, for a run that did not record it)")
	gaps := flag.String("gaps", "bench/gaps.md", "hand-written notes on missed targets, included when the file exists")
	root := flag.String("root", ".", "the repository's root, where git, .cache and .testenv are looked up")
	flag.Parse()

	if err := run(*in, *out, *gaps, *root, *start, *quick); err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
}

func run(in, out, gaps, root string, start, quick bool) error {
	if start {
		kv := probe(root, true)
		kv["mode"] = "full"
		if quick {
			kv["mode"] = "quick"
		}
		return writeKV(filepath.Join(in, startFile), kv)
	}
	if err := writeKV(filepath.Join(in, endFile), probe(root, false)); err != nil {
		return err
	}
	doc, err := render(in, gaps, root, quick)
	if err != nil {
		return err
	}
	if out == "" {
		out = filepath.Join(in, "benchmarks.md")
	}
	return writeFile(out, []byte(doc))
}

// Files the report writes or reads besides the benchmarks' own.
const (
	startFile = "run-start.txt"
	endFile   = "run-end.txt"
	runsFile  = "runs.tsv"
)

// probe collects what the header shows: the time and load average, and at
// the start also the tree, machine and versions. A value it cannot find is
// "unknown (why)".
func probe(root string, full bool) map[string]string {
	kv := map[string]string{
		"time":    time.Now().UTC().Format(time.RFC3339),
		"loadavg": loadavg(),
	}
	if !full {
		return kv
	}
	kv["commit"] = cmdLine(root, "git", "rev-parse", "--short=12", "HEAD")
	if st, err := cmdOut(root, "git", "status", "--porcelain", "--untracked-files=no"); err == nil {
		kv["dirty"] = strconv.FormatBool(strings.TrimSpace(st) != "")
	}
	kv["cpus"] = strconv.Itoa(runtime.NumCPU())
	kv["cpu"] = procField("/proc/cpuinfo", "model name")
	if m := procField("/proc/meminfo", "MemTotal"); !strings.HasPrefix(m, "unknown") {
		if f := strings.Fields(m); len(f) == 2 && f[1] == "kB" {
			if kb, err := strconv.ParseFloat(f[0], 64); err == nil {
				m = fmt.Sprintf("%.1f GiB", kb/(1<<20))
			}
		}
		kv["memory"] = m
	}
	kv["kernel"] = firstLineOf("/proc/sys/kernel/osrelease")
	kv["tmpdir"] = os.TempDir() + " on " + fstype.Of(os.TempDir())
	kv["go"] = runtime.Version()
	kv["java"] = firstLine(cmdLine(root, "java", "-version"))
	kv["kafka"] = jarVersion(root, ".cache/kafka-*/libs/kafka_*.jar", `^kafka_[0-9.]+-(.+)\.jar$`)
	kv["connect"] = jarVersion(root, ".cache/connect-*/libs/connect-runtime-*.jar", `^connect-runtime-(.+)\.jar$`)
	return kv
}

func loadavg() string {
	l := firstLineOf("/proc/loadavg")
	if f := strings.Fields(l); len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return l
}

func firstLineOf(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	return firstLine(strings.TrimSpace(string(b)))
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return strings.TrimSpace(l)
}

// procField is the value of the first "key: value" line of a /proc file.
func procField(path, key string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	for _, l := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(l, ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return "unknown (no " + key + " in " + path + ")"
}

// cmdOut runs a command in dir, bounded to 10 s, and returns its output
// (stdout and stderr: java -version prints to stderr).
func cmdOut(dir, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	if err := cmd.Start(); err != nil {
		return "", err
	}
	t := time.AfterFunc(10*time.Second, func() { _ = cmd.Process.Kill() })
	defer t.Stop()
	err := cmd.Wait()
	if b.Len() > 64<<10 {
		b.Truncate(64 << 10)
	}
	return b.String(), err
}

func cmdLine(dir, name string, args ...string) string {
	s, err := cmdOut(dir, name, args...)
	if err != nil {
		return "unknown (" + name + ": " + firstLine(strings.TrimSpace(err.Error()+" "+s)) + ")"
	}
	return strings.TrimSpace(s)
}

// jarVersion is the version in the name of the jar that glob finds under
// root (the test environment's broker and worker classpaths), with the
// directory it came from.
func jarVersion(root, glob, re string) string {
	m, _ := filepath.Glob(filepath.Join(root, glob))
	rx := regexp.MustCompile(re)
	var found []string
	for _, p := range m {
		if v := rx.FindStringSubmatch(filepath.Base(p)); v != nil {
			rel, err := filepath.Rel(root, filepath.Dir(p))
			if err != nil {
				rel = filepath.Dir(p)
			}
			found = append(found, v[1]+" ("+rel+")")
		}
	}
	if len(found) == 0 {
		return "unknown (no " + glob + ": make testenv-up fetches it)"
	}
	sort.Strings(found)
	return strings.Join(found, ", ")
}

func writeKV(path string, kv map[string]string) error {
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s: %s\n", k, strings.ReplaceAll(kv[k], "\n", " "))
	}
	return writeFile(path, []byte(b.String()))
}

// writeFile replaces path whole: a reader never sees half a document.
func writeFile(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
