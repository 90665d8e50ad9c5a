package javahost

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kcd-project/kcd/daemon/javahost/hostpb"
)

// JarName is the host's executable jar in its directory.
const JarName = "kcd-javahost.jar"

// Options configure a Host.
type Options struct {
	Java       string   // the java executable
	Dir        string   // holds kcd-javahost.jar and lib/
	PluginPath []string // Kafka Connect's plugin.path
	Heap       string   // -Xmx, e.g. 512m
	// JVMOptions are extra JVM options (before -jar).
	JVMOptions []string
	// PluginDiscovery is Kafka Connect's plugin.discovery (default
	// hybrid_warn, Kafka Connect's default).
	PluginDiscovery string
	// HangLimit is how long a call to a plugin may take before its task
	// fails with the plugin thread's stack (default 5m).
	HangLimit time.Duration
	// StartTimeout bounds the start: process up, connected, Hello and
	// plugin catalogue (default 2m: scanning a large plugin path is slow).
	StartTimeout time.Duration
	// WorkerConfig is the worker's converter settings, sent with each
	// task for the converters its connector names none of.
	WorkerConfig map[string]string
	Logger       *slog.Logger
}

// Restart backoff after the host died.
const (
	minBackoff = time.Second
	maxBackoff = time.Minute
	// stableAfter: a host that ran this long resets the backoff.
	stableAfter = 5 * time.Minute
)

const (
	maxStderrLine  = 4096 // longer lines are cut
	stderrKeep     = 10   // last lines kept for the error of a dead host
	exitWaitOnDrop = 5 * time.Second
)

// Host supervises the node's one Java host process: started on first
// use, restarted on demand with backoff after it died, killed by Close.
type Host struct {
	opts Options
	log  *slog.Logger

	mu       sync.Mutex
	cur      *proc         // the running host, nil when none
	starting chan struct{} // closed when the start under way ends
	startErr error         // of the last start or run
	failures int           // consecutive deaths or failed starts
	retryAt  time.Time     // no start before
	closed   bool
	plugins  []*hostpb.Plugin // the catalogue, once a host listed it

	units units

	// forConnector is the connector a host of its own runs for, "" for
	// the node's shared host; note then says why, for its units' errors.
	forConnector string
	note         string
	// quarantine: the shared host's strikes and connectors' own hosts
	// (quarantine.go); nil in a connector's own host.
	quarantine *quarantine
}

// proc is one run of the host.
type proc struct {
	cmd     *exec.Cmd
	dir     string
	conn    *Conn
	started time.Time
	exited  chan struct{} // closed once Wait returned
	exitErr error

	tailMu sync.Mutex
	tail   []string // last stderr lines
	// heapUnit is the unit the host blamed for its exhausted heap
	// (OutOfMemory.java's BLAME line), "" when none.
	heapUnit string
}

// New returns a Host; nothing starts until the first call needs it.
func New(opts Options) *Host {
	if opts.HangLimit <= 0 {
		opts.HangLimit = 5 * time.Minute
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 2 * time.Minute
	}
	if opts.Heap == "" {
		opts.Heap = "512m"
	}
	if opts.Java == "" {
		opts.Java = DefaultJava()
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	h := &Host{opts: opts, log: opts.Logger.With("subsys", "javahost"), quarantine: newQuarantine()}
	h.units.init()
	return h
}

// DefaultJava is $JAVA_HOME/bin/java when JAVA_HOME is set, else java
// from PATH.
func DefaultJava() string {
	if jh := os.Getenv("JAVA_HOME"); jh != "" {
		return filepath.Join(jh, "bin", "java")
	}
	return "java"
}

// DefaultDir is where the host is looked for: <dir of the kcd
// executable>/javahost, else javahost/target/javahost of the source
// checkout the working directory is in (for runs from a checkout).
func DefaultDir() string {
	if exe, err := os.Executable(); err == nil {
		d := filepath.Join(filepath.Dir(exe), "javahost")
		if _, err := os.Stat(filepath.Join(d, JarName)); err == nil {
			return d
		}
	}
	if wd, err := os.Getwd(); err == nil {
		for d := wd; ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
				return filepath.Join(d, "javahost", "target", "javahost")
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	return "javahost"
}

// Enabled tells whether a plugin path is set: without one the host has
// nothing to run and is never started.
func (h *Host) Enabled() bool { return h != nil && len(h.opts.PluginPath) > 0 }

// HangLimit is the longest a plugin call may take.
func (h *Host) HangLimit() time.Duration { return h.opts.HangLimit }

// Conn returns the connection to a running host, starting it when none
// runs (waiting for the start within ctx). After a death the host starts
// again only once its backoff passed; until then Conn fails with the
// reason of the death.
func (h *Host) Conn(ctx context.Context) (*Conn, error) {
	for {
		h.mu.Lock()
		if h.closed {
			h.mu.Unlock()
			return nil, errors.New("java host: closed")
		}
		if !h.Enabled() {
			h.mu.Unlock()
			return nil, errors.New("java host: no plugin path is set (--plugin-path)")
		}
		if h.cur != nil {
			c := h.cur.conn
			h.mu.Unlock()
			if err := c.Err(); err != nil {
				return nil, err // watch is clearing the run
			}
			return c, nil
		}
		if h.starting != nil {
			ch := h.starting
			h.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if wait := time.Until(h.retryAt); wait > 0 {
			err := h.startErr
			h.mu.Unlock()
			return nil, fmt.Errorf("java host is down, next start in %s: %w", wait.Round(time.Second), err)
		}
		ch := make(chan struct{})
		h.starting = ch
		h.mu.Unlock()

		p, plugins, err := h.start()
		h.mu.Lock()
		h.starting = nil
		close(ch)
		if err != nil {
			h.startErr = err
			h.failures++
			h.retryAt = time.Now().Add(backoff(h.failures))
			h.mu.Unlock()
			h.log.Error("java host did not start", "err", err)
			return nil, err
		}
		if h.closed {
			h.mu.Unlock()
			p.kill()
			return nil, errors.New("java host: closed")
		}
		h.cur, h.plugins = p, plugins
		h.mu.Unlock()
		go h.watch(p)
	}
}

func backoff(failures int) time.Duration {
	d := minBackoff
	for i := 1; i < failures && d < maxBackoff; i++ {
		d *= 2
	}
	return min(d, maxBackoff)
}

// Plugins returns the host's catalogue, starting the host when no
// catalogue is known yet.
func (h *Host) Plugins(ctx context.Context) ([]*hostpb.Plugin, error) {
	h.mu.Lock()
	ps := h.plugins
	h.mu.Unlock()
	if ps != nil {
		return ps, nil
	}
	if _, err := h.Conn(ctx); err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.plugins, nil
}

// cachedPlugins is the catalogue if one is known, without starting
// anything.
func (h *Host) cachedPlugins() []*hostpb.Plugin {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.plugins
}

// watch waits for the run's end and clears it, so the next use starts
// the host again; units of the run are told.
func (h *Host) watch(p *proc) {
	<-p.conn.Done()
	err := p.conn.Err()
	p.kill() // a host that dropped its connection is no use
	culprit := ""
	select { // the tail is complete once the process is gone
	case <-p.exited:
		// Only a halt for an exhausted heap blames: a plugin may print anything.
		var ee *exec.ExitError
		if errors.As(p.exitErr, &ee) && ee.ExitCode() == heapExitStatus {
			p.tailMu.Lock()
			culprit = connectorOfUnit(p.heapUnit)
			p.tailMu.Unlock()
		}
	case <-time.After(exitWaitOnDrop):
	}
	removed := false
	if culprit != "" && h.quarantine != nil {
		removed = h.heapDeath(culprit)
	}
	h.mu.Lock()
	if h.cur == p {
		h.cur = nil
		h.startErr = err
		if time.Since(p.started) > stableAfter {
			h.failures = 0
		}
		if removed {
			// What killed it runs elsewhere now: the others come back at once.
			h.retryAt = time.Now()
		} else {
			h.failures++
			h.retryAt = time.Now().Add(backoff(h.failures))
		}
	}
	closed := h.closed
	h.mu.Unlock()
	if !closed {
		h.log.Error("java host ended; its connectors and tasks fail and restart", "err", err, "heap_exhausted_by", culprit)
	}
	h.units.connDied(p.conn, h.noted(err))
}

// Close stops the host and removes its directory, and the hosts of
// quarantined connectors.
func (h *Host) Close() error {
	h.mu.Lock()
	h.closed = true
	p := h.cur
	h.cur = nil
	h.mu.Unlock()
	if h.quarantine != nil { // after closed: hostFor makes no more
		h.quarantine.closeOwn()
	}
	if p != nil {
		p.conn.Close(errors.New("java host: closed"))
		p.stop()
	}
	return nil
}

// start runs the host process and waits for its Hello and catalogue.
func (h *Host) start() (*proc, []*hostpb.Plugin, error) {
	jar := filepath.Join(h.opts.Dir, JarName)
	if _, err := os.Stat(jar); err != nil {
		return nil, nil, fmt.Errorf("java host: %w (set --java-host-dir)", err)
	}
	dir, err := os.MkdirTemp("", "kcd-jh-") // short: a socket path must stay under 108 bytes
	if err != nil {
		return nil, nil, fmt.Errorf("java host: make its directory: %w", err)
	}
	sock := filepath.Join(dir, "s")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, nil, fmt.Errorf("java host: listen on %s: %w", sock, err)
	}
	defer ln.Close()
	var tok [32]byte
	if _, err := rand.Read(tok[:]); err != nil {
		_ = os.RemoveAll(dir)
		return nil, nil, err
	}
	token := hex.EncodeToString(tok[:])

	// No -XX:+ExitOnOutOfMemoryError: the host answers the call that ran
	// out of heap with its stack, then halts by itself (OutOfMemory.java).
	discovery := h.opts.PluginDiscovery
	if discovery == "" {
		discovery = "hybrid_warn"
	}
	args := append([]string{"-Xmx" + h.opts.Heap}, h.opts.JVMOptions...)
	if h.forConnector != "" { // tells it apart in ps
		args = append(args, "-Dkcd.javahost.connector="+h.forConnector)
	}
	args = append(args, "-Djava.security.manager=allow", "-jar", jar,
		"--plugin-path", strings.Join(h.opts.PluginPath, ","), "--plugin-discovery", discovery)
	cmd := exec.Command(h.opts.Java, args...)
	cmd.Env = append(os.Environ(), "KCD_HOST_SOCKET="+sock, "KCD_HOST_TOKEN="+token)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pr, pw, err := os.Pipe()
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, nil, err
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		_ = os.RemoveAll(dir)
		return nil, nil, fmt.Errorf("java host: run %s: %w", h.opts.Java, err)
	}
	pw.Close()
	p := &proc{cmd: cmd, dir: dir, started: time.Now(), exited: make(chan struct{})}
	logDone := make(chan struct{})
	go func() { defer close(logDone); p.forward(pr, h.log) }()
	go func() {
		err := cmd.Wait()
		<-logDone // the tail is complete
		p.exitErr = err
		_ = os.RemoveAll(dir)
		close(p.exited)
	}()
	h.log.Info("java host starting", "connector", h.forConnector, "pid", cmd.Process.Pid, "heap", h.opts.Heap, "plugin_path", strings.Join(h.opts.PluginPath, ","))

	deadline := time.Now().Add(h.opts.StartTimeout)
	_ = ln.SetDeadline(deadline)
	go func() {
		select { // a host that exits before it connects ends the wait
		case <-p.exited:
			_ = ln.Close()
		case <-time.After(time.Until(deadline)):
		}
	}()
	c, err := ln.AcceptUnix()
	if err != nil {
		p.kill()
		return nil, nil, p.why(fmt.Errorf("java host did not connect within %s: %w", h.opts.StartTimeout, err))
	}
	_ = os.Remove(sock) // one connection only
	_ = c.SetDeadline(deadline)
	f, err := readFrame(c, DefaultMaxFrame)
	if err != nil {
		c.Close()
		p.kill()
		return nil, nil, p.why(fmt.Errorf("java host: read its hello: %w", err))
	}
	hello := f.GetHello()
	if hello == nil || subtle.ConstantTimeCompare([]byte(hello.GetToken()), []byte(token)) != 1 {
		c.Close()
		p.kill()
		return nil, nil, errors.New("java host: the first frame is not a hello with the right token")
	}
	_ = c.SetDeadline(time.Time{})
	maxFrame := uint32(DefaultMaxFrame)
	if m := hello.GetMaxFrameBytes(); m > 0 && m < maxFrame {
		maxFrame = m
	}
	p.conn = NewConn(c, maxFrame, h.units.handle, p.why, h.log)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	resp, err := p.conn.Call(ctx, &hostpb.Request{Call: &hostpb.Request_ListPlugins{ListPlugins: &hostpb.ListPluginsRequest{}}})
	if err != nil {
		p.conn.Close(err)
		p.kill()
		return nil, nil, fmt.Errorf("java host: list its plugins: %w", err)
	}
	plugins := resp.GetPlugins().GetPlugins()
	if plugins == nil {
		plugins = []*hostpb.Plugin{}
	}
	h.log.Info("java host started", "pid", hello.GetPid(), "version", hello.GetHostVersion(),
		"connect_version", hello.GetConnectVersion(), "plugins", len(plugins), "took", time.Since(p.started).Round(time.Millisecond))
	return p, plugins, nil
}

// forward logs the host's output line by line, at the level a line
// names, cut to maxStderrLine; the last lines are kept for why.
func (p *proc) forward(r io.ReadCloser, log *slog.Logger) {
	defer r.Close()
	br := bufio.NewReaderSize(r, maxStderrLine)
	for {
		line, isPrefix, err := br.ReadLine()
		if len(line) > 0 || (err == nil && !isPrefix) {
			s := string(line)
			for isPrefix { // skip the rest of a long line
				_, isPrefix, err = br.ReadLine()
			}
			log.Log(context.Background(), levelOf(s), "java host: "+s)
			p.tailMu.Lock()
			if u, ok := strings.CutPrefix(s, heapBlame); ok && p.heapUnit == "" {
				p.heapUnit = u
			}
			p.tail = append(p.tail, s)
			if len(p.tail) > stderrKeep {
				p.tail = p.tail[len(p.tail)-stderrKeep:]
			}
			p.tailMu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

// levelOf finds a log4j/JUL level word near the start of a line.
func levelOf(line string) slog.Level {
	head := line[:min(len(line), 80)]
	for _, l := range []struct {
		word string
		lvl  slog.Level
	}{{"ERROR", slog.LevelError}, {"SEVERE", slog.LevelError}, {"FATAL", slog.LevelError},
		{"WARN", slog.LevelWarn}, {"INFO", slog.LevelInfo}, {"DEBUG", slog.LevelDebug}, {"TRACE", slog.LevelDebug}} {
		if strings.Contains(head, l.word) {
			return l.lvl
		}
	}
	if strings.HasPrefix(line, "\tat ") || strings.HasPrefix(line, "Exception") || strings.HasPrefix(line, "Caused by") {
		return slog.LevelError
	}
	return slog.LevelInfo
}

// why words the end of a run: the process's exit status (waited for a
// little) and its last output lines.
func (p *proc) why(cause error) error {
	select {
	case <-p.exited:
	case <-time.After(exitWaitOnDrop):
	}
	status := "still running"
	select {
	case <-p.exited:
		if p.exitErr == nil {
			status = "exit status 0"
		} else {
			status = p.exitErr.Error()
		}
	default:
	}
	p.tailMu.Lock()
	tail := strings.Join(p.tail, "\n")
	p.tailMu.Unlock()
	if tail == "" {
		return fmt.Errorf("java host exited (%s): %w", status, cause)
	}
	return fmt.Errorf("java host exited (%s): %w; its last output:\n%s", status, cause, tail)
}

// kill ends the process group at once.
func (p *proc) kill() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
}

// stop asks the process group to end, then kills it, and waits.
func (p *proc) stop() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
		p.kill()
		<-p.exited
	}
}

// heapBlame starts the line a host prints before it halts for an
// exhausted heap, naming the unit charged with it (OutOfMemory.java).
const heapBlame = "kcd-javahost: heap exhausted by unit "

// heapExitStatus is the host's exit status after it halted for an
// exhausted heap (OutOfMemory.STATUS).
const heapExitStatus = 3

// connectorOfUnit is the connector of a host's unit name: "connector-"
// and the connector's name, or "task-" and a task id (taskBase.id:
// "<connector>-<number>#<seq>"); "" for anything else.
func connectorOfUnit(unit string) string {
	if c, ok := strings.CutPrefix(unit, "connector-"); ok {
		return c
	}
	id, ok := strings.CutPrefix(unit, "task-")
	if !ok {
		return ""
	}
	i := strings.LastIndexByte(id, '#')
	if i < 0 {
		return ""
	}
	j := strings.LastIndexByte(id[:i], '-')
	if j <= 0 {
		return ""
	}
	return id[:j]
}

// Pid is the running host's process id, 0 when none runs.
func (h *Host) Pid() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cur == nil {
		return 0
	}
	return h.cur.cmd.Process.Pid
}
