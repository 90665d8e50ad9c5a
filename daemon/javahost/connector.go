package javahost

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kcd-project/kcd/daemon/connect"
	"github.com/kcd-project/kcd/daemon/javahost/hostpb"
)

// stopLimit bounds a stop call: Stop must return promptly.
const stopLimit = 30 * time.Second

// connector proxies a Java connector. Configs go to the host as they are
// (the plugin needs its passwords); they are never logged here.
type connector struct {
	p       *Provider
	class   string
	version string

	// Set by Start.
	h       *Host  // the shared host, or the connector's own (quarantine.go)
	release func() // of h, once the connector ended
	conn    *Conn
	name    string
	cctx    connect.ConnectorContext
}

// sourceConnector and sinkConnector give the proxy its NewTask.
type sourceConnector struct{ *connector }
type sinkConnector struct{ *connector }

func (c *sourceConnector) NewTask() connect.SourceTask { return &sourceTask{taskBase: c.taskBase()} }
func (c *sinkConnector) NewTask() connect.SinkTask     { return &sinkTask{taskBase: c.taskBase()} }

func (c *connector) taskBase() taskBase { return taskBase{p: c.p, class: c.class} }

// SerializedRecords: the host runs the converters.
func (c *connector) SerializedRecords() {}

func (c *connector) Version() string { return c.version }

func (c *connector) ConfigDef() connect.ConfigDef { return c.p.configDef(c.class) }

// call runs one connector call, bounded by the hang limit.
func (c *connector) call(limit time.Duration, req *hostpb.Request) (*hostpb.Response, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	resp, err := c.conn.Call(ctx, req)
	if errors.Is(err, context.DeadlineExceeded) {
		return nil, c.h.noted(fmt.Errorf("the java connector %s did not answer within %s", c.class, limit))
	}
	return resp, c.h.noted(err)
}

func (c *connector) Start(cctx connect.ConnectorContext, config map[string]string) error {
	h, release, err := c.p.h.hostFor(config["name"])
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), h.opts.StartTimeout)
	conn, err := h.Conn(ctx)
	cancel()
	if err != nil {
		release()
		return h.noted(err)
	}
	c.h, c.release, c.conn, c.cctx, c.name = h, release, conn, cctx, config["name"]
	c.h.units.addConnector(c)
	_, err = c.call(c.h.opts.HangLimit, &hostpb.Request{Call: &hostpb.Request_ConnectorStart{ConnectorStart: &hostpb.ConnectorStartRequest{
		Connector: c.name, ConnectorClass: c.class, Config: withClass(config, c.class)}}})
	if err != nil {
		c.h.units.removeConnector(c)
		release()
		return err
	}
	return nil
}

func (c *connector) TaskConfigs(maxTasks int) ([]map[string]string, error) {
	if c.conn == nil {
		return nil, errors.New("connector not started")
	}
	resp, err := c.call(c.h.opts.HangLimit, &hostpb.Request{Call: &hostpb.Request_TaskConfigs{TaskConfigs: &hostpb.TaskConfigsRequest{
		Connector: c.name, MaxTasks: int32(maxTasks)}}})
	if err != nil {
		return nil, err
	}
	var out []map[string]string
	for _, t := range resp.GetTaskConfigs().GetTasks() {
		cfg := t.GetConfig()
		if cfg == nil {
			cfg = map[string]string{}
		}
		out = append(out, cfg)
	}
	return out, nil
}

func (c *connector) Stop() error {
	if c.conn == nil {
		return nil
	}
	defer c.release()
	defer c.h.units.removeConnector(c)
	if c.conn.Err() != nil {
		return nil // the host that ran it is gone
	}
	_, err := c.call(min(stopLimit, c.h.opts.HangLimit), &hostpb.Request{Call: &hostpb.Request_ConnectorStop{ConnectorStop: &hostpb.ConnectorStopRequest{Connector: c.name}}})
	return err
}

// ValidateConfig runs the plugin's validate: its per-setting errors.
func (c *connector) ValidateConfig(config map[string]string) map[string][]string {
	ctx, cancel := context.WithTimeout(context.Background(), c.p.h.opts.HangLimit)
	defer cancel()
	resp, err := c.p.validate(ctx, c.class, withClass(config, c.class))
	if err != nil {
		return map[string][]string{"connector.class": {fmt.Sprintf("the java host could not validate the config: %v", err)}}
	}
	out := map[string][]string{}
	for _, v := range resp.GetValues() {
		if len(v.GetErrors()) > 0 {
			out[v.GetName()] = append(out[v.GetName()], v.GetErrors()...)
		}
	}
	return out
}

// AlterOffsets runs the connector's alterOffsets on a fresh instance in
// the host (connect.OffsetAlterer): its exception refuses the change, its
// answer says whether it confirmed it.
func (c *connector) AlterOffsets(config map[string]string, offsets []connect.PartitionOffset) (bool, error) {
	entries := make([]*hostpb.OffsetEntry, 0, len(offsets))
	for _, o := range offsets {
		pb, err := encodeJSONMap(o.Partition)
		if err != nil {
			return false, err
		}
		ob, err := encodeJSONMap(o.Offset)
		if err != nil {
			return false, err
		}
		entries = append(entries, &hostpb.OffsetEntry{Partition: pb, Offset: ob})
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.p.h.opts.HangLimit)
	defer cancel()
	conn, err := c.p.h.Conn(ctx)
	if err != nil {
		return false, err
	}
	resp, err := conn.Call(ctx, &hostpb.Request{Call: &hostpb.Request_AlterOffsets{AlterOffsets: &hostpb.AlterOffsetsRequest{
		ConnectorClass: c.class, Config: withClass(config, c.class), Offsets: entries}}})
	var je *JavaError
	if errors.As(err, &je) && je.Message != "" {
		return false, errors.New(je.Message)
	}
	if err != nil {
		return false, err
	}
	return resp.GetAlterOffsets().GetHandled(), nil
}

// taskBase is what source and sink task proxies share: their handle in
// the host, the hang limit and the stop.
type taskBase struct {
	p     *Provider
	class string

	h       *Host  // the shared host, or the connector's own (quarantine.go)
	release func() // of h, once the task ended
	conn    *Conn
	id      string
	hang    time.Duration

	stopped  chan struct{}
	stopOnce sync.Once
	// abandoned: a call hung; the unit is given up and every later call
	// fails with the same error.
	abandoned atomic.Pointer[error]

	offsets connect.OffsetReader                                    // for the host's offset reads
	errant  func(context.Context, *connect.SinkRecord, error) error // for its errant records
}

var taskSeq atomic.Uint64

// start registers the task and starts it in the host.
func (t *taskBase) start(ctx any, config map[string]string, sink bool) error {
	info, ok := ctx.(connect.TaskInfo)
	if !ok {
		return errors.New("the runtime offers no connect.TaskInfo: a Java task needs its connector's config")
	}
	name, num, connCfg := info.TaskInfo()
	connCfg = withClass(connCfg, t.class)
	h, release, err := t.p.h.hostFor(name)
	if err != nil {
		return err
	}
	sctx, cancel := context.WithTimeout(context.Background(), h.opts.StartTimeout)
	conn, err := h.Conn(sctx)
	cancel()
	if err != nil {
		release()
		return h.noted(err)
	}
	t.h, t.release = h, release
	t.conn, t.hang, t.stopped = conn, h.opts.HangLimit, make(chan struct{})
	// connectorOfUnit reads the connector's name back from the id.
	t.id = fmt.Sprintf("%s-%d#%d", name, num, taskSeq.Add(1))
	h.units.addTask(t)
	_, err = t.call(context.Background(), &hostpb.Request{Call: &hostpb.Request_TaskStart{TaskStart: &hostpb.TaskStartRequest{
		Task: t.id, Connector: name, TaskNumber: int32(num), Sink: sink,
		ConnectorConfig: connCfg, TaskConfig: config, WorkerConfig: h.opts.WorkerConfig}}})
	if err != nil {
		h.units.removeTask(t)
		release()
		return err
	}
	return nil
}

var errStopped = errors.New("task stopped")

// call runs one task call: it returns when the host answers, ctx ends or
// the task is stopped. A call that outlives the hang limit fails the task
// with the stack of the plugin's thread, and the unit is abandoned.
func (t *taskBase) call(ctx context.Context, req *hostpb.Request) (*hostpb.Response, error) {
	if e := t.abandoned.Load(); e != nil {
		return nil, *e
	}
	if t.conn == nil {
		return nil, errors.New("task not started")
	}
	cctx, cancel := context.WithTimeout(ctx, t.hang)
	defer cancel()
	go func() {
		select {
		case <-t.stopped:
			cancel()
		case <-cctx.Done():
		}
	}()
	resp, err := t.conn.Call(cctx, req)
	if err == nil {
		return resp, nil
	}
	select {
	case <-t.stopped:
		return nil, errStopped
	default:
	}
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		return nil, t.hung(req)
	}
	var je *JavaError
	if errors.As(err, &je) && je.Retriable {
		return nil, &connect.RetriableError{Err: je}
	}
	return nil, t.h.noted(err)
}

// hung gets the stack of the task's thread and abandons the unit.
func (t *taskBase) hung(req *hostpb.Request) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stack := "(the host did not give it)"
	if resp, err := t.conn.Call(ctx, &hostpb.Request{Call: &hostpb.Request_Stack{Stack: &hostpb.StackRequest{Task: t.id}}}); err == nil {
		stack = resp.GetStack().GetStackTrace()
	}
	err := t.h.noted(fmt.Errorf("the java task did not return from %s within %s; its thread:\n%s", callName(req), t.hang, stack))
	t.abandoned.Store(&err)
	go func() { // the host gives the unit up; its thread may never end
		sctx, scancel := context.WithTimeout(context.Background(), stopLimit)
		defer scancel()
		_, _ = t.conn.Call(sctx, &hostpb.Request{Call: &hostpb.Request_TaskStop{TaskStop: &hostpb.TaskStopRequest{Task: t.id}}})
	}()
	return err
}

func callName(req *hostpb.Request) string {
	switch req.Call.(type) {
	case *hostpb.Request_Poll:
		return "poll"
	case *hostpb.Request_Put:
		return "put"
	case *hostpb.Request_PreCommit:
		return "preCommit"
	case *hostpb.Request_TaskStart:
		return "start"
	case *hostpb.Request_SourceCommit:
		return "commit"
	case *hostpb.Request_Open:
		return "open"
	case *hostpb.Request_Close:
		return "close"
	}
	return fmt.Sprintf("%T", req.Call)
}

// stop ends the task in the host (once) and unregisters it.
func (t *taskBase) stop(last *hostpb.Request) error {
	if t.conn == nil {
		return nil
	}
	var err error
	t.h.log.Debug("task stop", "task", t.id)
	t.stopOnce.Do(func() {
		close(t.stopped)
		defer t.release()
		defer t.h.units.removeTask(t)
		if t.abandoned.Load() != nil || t.conn.Err() != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), min(stopLimit, t.hang))
		defer cancel()
		if last != nil {
			_, _ = t.conn.Call(ctx, last)
		}
		_, err = t.conn.Call(ctx, &hostpb.Request{Call: &hostpb.Request_TaskStop{TaskStop: &hostpb.TaskStopRequest{Task: t.id}}})
	})
	return err
}

// withClass is cfg with connector.class the plugin's Java class: the
// config may name it by an alias kcd resolved.
func withClass(cfg map[string]string, class string) map[string]string {
	out := maps.Clone(cfg)
	if out == nil {
		out = map[string]string{}
	}
	out["connector.class"] = class
	return out
}

// decodeJSONMap reads schemaless JSON as kcd stores offsets: numbers as
// json.Number. Empty input is nil.
func decodeJSONMap(b []byte) (map[string]any, error) {
	if len(b) == 0 {
		return nil, nil
	}
	if m, ok := decodeFlat(b); ok {
		return m, nil
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		return nil, fmt.Errorf("decode %q: %w", b, err)
	}
	return m, nil
}

// encodeJSONMap writes m as schemaless JSON; nil is empty.
func encodeJSONMap(m map[string]any) ([]byte, error) {
	if m == nil {
		return nil, nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode offset: %w", err)
	}
	return b, nil
}

// What the runtime and the herder look for in a connector.
var (
	_ connect.SourceConnector       = (*sourceConnector)(nil)
	_ connect.SinkConnector         = (*sinkConnector)(nil)
	_ connect.SerializedRecords     = (*connector)(nil)
	_ connect.ConfigValidator       = (*connector)(nil)
	_ connect.SourceRecordCommitter = (*sourceTask)(nil)
	_ connect.SourceCommitter       = (*sourceTask)(nil)
	_ connect.SourcePollsAhead      = (*sourceTask)(nil)
	_ connect.SinkPreCommitter      = (*sinkTask)(nil)
	_ connect.OffsetAlterer         = (*connector)(nil)
)
