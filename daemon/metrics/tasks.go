package metrics

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/kcd-project/kcd/daemon/worker"
)

// taskWriter writes the worker's series in Prometheus's text format by
// hand: at 1,000 tasks they are tens of thousands of lines, which
// client_golang's registry (a protobuf message per series) gathers about
// ten times slower. It reuses its buffers from scrape to scrape; each
// scrape has its own.
type taskWriter struct {
	stats  worker.Stats
	states []worker.UnitState
	counts map[string]*[8]int   // tasks per connector and status
	labels []byte               // the tasks' label sets, end to end
	ends   []int                // ends[i]: where task i's labels end in labels
	rows   [][numTaskCols]int64 // rows[i]: task i's values (taskRow)
	sels   []selector           // sels[i]: the families task i has series in
	// spans[i][k]: where task i's series of taskFamilies[k] is in b.
	spans [][len(taskFamilies)]lineSpan
	// The previous scrape's b, labels, rows, sels and spans: a series whose
	// task and value did not change is copied from it, not formatted again.
	prev       []byte
	prevLabels []byte
	prevRows   [][numTaskCols]int64
	prevSels   []selector
	prevSpans  [][len(taskFamilies)]lineSpan
	b          []byte
	// scratch holds the files the process metrics read.
	scratch []byte
}

// family is one metric family: its name, type, and help, which names the
// Kafka Connect metric it stands for.
type family struct{ name, typ, help string }

func (w *taskWriter) header(f family) {
	w.b = append(w.b, "# HELP "...)
	w.b = append(w.b, f.name...)
	w.b = append(w.b, ' ')
	w.b = append(w.b, f.help...)
	w.b = append(w.b, "\n# TYPE "...)
	w.b = append(w.b, f.name...)
	w.b = append(w.b, ' ')
	w.b = append(w.b, f.typ...)
	w.b = append(w.b, '\n')
}

// line writes name{labels} v; suffix goes after the name (_sum, _count).
func (w *taskWriter) line(name, suffix string, labels []byte, v float64) {
	w.b = append(w.b, name...)
	w.b = append(w.b, suffix...)
	if len(labels) > 0 {
		w.b = append(w.b, '{')
		w.b = append(w.b, labels...)
		w.b = append(w.b, '}')
	}
	w.b = append(w.b, ' ')
	w.b = appendValue(w.b, v)
	w.b = append(w.b, '\n')
}

func appendValue(b []byte, v float64) []byte {
	if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
		return strconv.AppendInt(b, int64(v), 10)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

// appendLabel appends name="value", escaped as the text format wants.
func appendLabel(b []byte, name, value string) []byte {
	b = append(b, name...)
	b = append(b, `="`...)
	if needsEscape(value) {
		for i := 0; i < len(value); i++ {
			switch c := value[i]; c {
			case '\\':
				b = append(b, `\\`...)
			case '"':
				b = append(b, `\"`...)
			case '\n':
				b = append(b, `\n`...)
			default:
				b = append(b, c)
			}
		}
	} else {
		b = append(b, value...)
	}
	return append(b, '"')
}

func needsEscape(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '\\' || c == '"' || c == '\n' {
			return true
		}
	}
	return false
}

func (w *taskWriter) taskLabels(i int) []byte {
	start := 0
	if i > 0 {
		start = w.ends[i-1]
	}
	return w.labels[start:w.ends[i]]
}

// appendFixed appends v / 10^scale in decimal, exactly, without trailing
// zeros: seconds from nanoseconds without the float formatting that took a
// good part of a scrape.
func appendFixed(b []byte, v int64, scale int) []byte {
	if v < 0 {
		b = append(b, '-')
		v = -v // the values here are durations and times, far from MinInt64
	}
	p := int64(1)
	for range scale {
		p *= 10
	}
	b = strconv.AppendInt(b, v/p, 10)
	frac := v % p
	if frac == 0 {
		return b
	}
	var d [19]byte
	n := scale
	for frac%10 == 0 {
		frac /= 10
		n--
	}
	for i := n - 1; i >= 0; i-- {
		d[i] = byte('0' + frac%10)
		frac /= 10
	}
	b = append(b, '.')
	return append(b, d[:n]...)
}

// nanos is the scale of a duration in nanoseconds written as seconds.
const nanos = 9

// write appends the worker's series to w.b: what src reports now, so that
// the series of a task that went away go with it.
func (w *taskWriter) write(src Worker, now time.Time) {
	src.StatsInto(&w.stats)
	w.states = src.States(w.states[:0])
	w.prevLabels, w.labels = w.labels, w.prevLabels[:0]
	w.ends = w.ends[:0]
	for i := range w.stats.Tasks {
		id := w.stats.Tasks[i].ID
		w.labels = append(w.labels, '{')
		w.labels = appendLabel(w.labels, "connector", id.Connector)
		w.labels = append(w.labels, `,task="`...)
		w.labels = strconv.AppendInt(w.labels, int64(id.Task), 10)
		w.labels = append(w.labels, `"} `...)
		w.ends = append(w.ends, len(w.labels))
	}
	w.writeStates()
	w.writeWorker(src.Startups())

	w.writeTasks()
}

// selector picks the tasks a per-task family has series for.
type selector uint8

const (
	selAny selector = 1 << iota
	selSource
	selSink
	selSinkLag // sinks whose lag is known
)

func selectorsOf(t *worker.TaskStats) selector {
	s := selAny
	if t.Sink {
		s |= selSink
		if t.Lag >= 0 {
			s |= selSinkLag
		}
	} else {
		s |= selSource
	}
	return s
}

// taskFamily is a family with one series per selected task: the value in
// column col of the task's row, an integer (scale < 0) or fixed point
// v / 10^scale; a summary (count >= 0) writes col as _sum, in seconds from
// nanoseconds, and column count as _count.
type taskFamily struct {
	f          family
	sel        selector
	scale      int
	col, count int
}

// numTaskCols is the length of a task's row (taskRow).
const numTaskCols = 31

// taskRow reads the values of every per-task family of t at once, so that
// writing the families calls no function per series.
func taskRow(t *worker.TaskStats) [numTaskCols]int64 {
	return [numTaskCols]int64{
		t.PeakBatch,
		t.BatchRecords,
		t.Commits,
		t.CommitFailures,
		int64(t.CommitTime),
		t.Commits + t.CommitFailures,
		int64(t.PeakCommitTime),
		t.Polled,
		t.Records,
		int64(t.BatchTime),
		t.Batches,
		int64(t.PeakBatchTime),
		t.InFlightRecords,
		t.PeakInFlightRecords,
		t.Read,
		t.Records,
		int64(t.BatchTime),
		t.Batches,
		int64(t.PeakBatchTime),
		t.Commits,
		t.CommitSkips,
		int64(len(t.Partitions)),
		t.Lag,
		t.Errors.Failures,
		t.Errors.Errors,
		t.Skipped,
		t.Errors.Retries,
		t.Errors.Logged,
		t.Errors.DLQRequests,
		t.Errors.DLQFailures,
		t.Errors.LastErrorUTC,
	}
}

// taskFamilies are the per-task families, in the order they are written.
var taskFamilies = [...]taskFamily{
	{family{"kcd_connector_task_batch_size_max", "gauge", "The largest batch of records the task handed over: a Poll batch (source) or Put batch (sink). Kafka Connect: connector-task-metrics batch-size-max."}, selAny, -1, 0, -1},
	{family{"kcd_connector_task_batch_records_total", "counter", "Records in the batches the task handed over. Kafka Connect: connector-task-metrics batch-size-avg, which is rate(kcd_connector_task_batch_records_total) / rate(kcd_source_task_poll_batch_seconds_count or kcd_sink_task_put_batch_seconds_count)."}, selAny, -1, 1, -1},
	{family{"kcd_connector_task_offset_commit_success_total", "counter", "Offset commits that completed. Kafka Connect: connector-task-metrics offset-commit-success-percentage (with the failures)."}, selAny, -1, 2, -1},
	{family{"kcd_connector_task_offset_commit_failure_total", "counter", "Offset commits that failed. Kafka Connect: connector-task-metrics offset-commit-failure-percentage (with the successes)."}, selAny, -1, 3, -1},
	{family{"kcd_connector_task_offset_commit_seconds", "summary", "Time offset commits took. Kafka Connect: connector-task-metrics offset-commit-avg-time-ms."}, selAny, nanos, 4, 5},
	{family{"kcd_connector_task_offset_commit_max_seconds", "gauge", "The longest offset commit. Kafka Connect: connector-task-metrics offset-commit-max-time-ms."}, selAny, nanos, 6, -1},
	{family{"kcd_source_task_record_poll_total", "counter", "Records the source task's Poll returned. Kafka Connect: source-task-metrics source-record-poll-total; source-record-poll-rate is its rate()."}, selSource, -1, 7, -1},
	{family{"kcd_source_task_record_write_total", "counter", "Records of the source task that Kafka acknowledged. Kafka Connect: source-task-metrics source-record-write-total; source-record-write-rate is its rate()."}, selSource, -1, 8, -1},
	{family{"kcd_source_task_poll_batch_seconds", "summary", "Time the source task's Poll took for a batch. Kafka Connect: source-task-metrics poll-batch-avg-time-ms."}, selSource, nanos, 9, 10},
	{family{"kcd_source_task_poll_batch_max_seconds", "gauge", "The longest Poll of a batch. Kafka Connect: source-task-metrics poll-batch-max-time-ms."}, selSource, nanos, 11, -1},
	{family{"kcd_source_task_record_active_count", "gauge", "Records the source task polled that Kafka has not acknowledged yet. Kafka Connect: source-task-metrics source-record-active-count."}, selSource, -1, 12, -1},
	{family{"kcd_source_task_record_active_count_max", "gauge", "The most records of the source task in flight at once. Kafka Connect: source-task-metrics source-record-active-count-max."}, selSource, -1, 13, -1},
	{family{"kcd_sink_task_record_read_total", "counter", "Records the sink task read from Kafka. Kafka Connect: sink-task-metrics sink-record-read-total; sink-record-read-rate is its rate()."}, selSink, -1, 14, -1},
	{family{"kcd_sink_task_record_send_total", "counter", "Records the sink task's Put took. Kafka Connect: sink-task-metrics sink-record-send-total; sink-record-send-rate is its rate()."}, selSink, -1, 15, -1},
	{family{"kcd_sink_task_put_batch_seconds", "summary", "Time the sink task's Put took for a batch. Kafka Connect: sink-task-metrics put-batch-avg-time-ms."}, selSink, nanos, 16, 17},
	{family{"kcd_sink_task_put_batch_max_seconds", "gauge", "The longest Put of a batch. Kafka Connect: sink-task-metrics put-batch-max-time-ms."}, selSink, nanos, 18, -1},
	{family{"kcd_sink_task_offset_commit_completion_total", "counter", "Offset commits of the sink task that completed. Kafka Connect: sink-task-metrics offset-commit-completion-total."}, selSink, -1, 19, -1},
	{family{"kcd_sink_task_offset_commit_skip_total", "counter", "Offset commits of the sink task skipped because its Flush or PreCommit asked to commit later. Kafka Connect: sink-task-metrics offset-commit-skip-total."}, selSink, -1, 20, -1},
	{family{"kcd_sink_task_partition_count", "gauge", "Topic partitions assigned to the sink task. Kafka Connect: sink-task-metrics partition-count."}, selSink, -1, 21, -1},
	{family{"kcd_sink_task_record_lag", "gauge", "Records the sink task is behind over its partitions, as of its last fetch; absent while unknown. Kafka Connect: sink-task-metrics sink-record-lag-max (a sum here)."}, selSinkLag, -1, 22, -1},
	{family{"kcd_task_error_record_failures_total", "counter", "Failed attempts to process a record, retries included. Kafka Connect: task-error-metrics total-record-failures."}, selAny, -1, 23, -1},
	{family{"kcd_task_error_record_errors_total", "counter", "Records whose processing ended in an error. Kafka Connect: task-error-metrics total-record-errors."}, selAny, -1, 24, -1},
	{family{"kcd_task_error_records_skipped_total", "counter", "Records skipped under errors.tolerance=all. Kafka Connect: task-error-metrics total-records-skipped."}, selAny, -1, 25, -1},
	{family{"kcd_task_error_retries_total", "counter", "Retries of a failed operation (errors.retry.timeout). Kafka Connect: task-error-metrics total-retries."}, selAny, -1, 26, -1},
	{family{"kcd_task_error_errors_logged_total", "counter", "Errors logged (errors.log.enable). Kafka Connect: task-error-metrics total-errors-logged."}, selAny, -1, 27, -1},
	{family{"kcd_task_error_deadletterqueue_produce_requests_total", "counter", "Records sent to the dead letter queue. Kafka Connect: task-error-metrics deadletterqueue-produce-requests."}, selAny, -1, 28, -1},
	{family{"kcd_task_error_deadletterqueue_produce_failures_total", "counter", "Records the dead letter queue did not take. Kafka Connect: task-error-metrics deadletterqueue-produce-failures."}, selAny, -1, 29, -1},
	{family{"kcd_task_error_last_error_timestamp_seconds", "gauge", "When the task last met an error (Unix seconds); 0: never. Kafka Connect: task-error-metrics last-error-timestamp."}, selAny, 3, 30, -1},
}

// lineSpan is where a line is in a scrape's buffer.
type lineSpan struct{ start, end int32 }

// begin starts a scrape: the last one's buffer becomes prev.
func (w *taskWriter) begin() {
	w.prev, w.b = w.b, w.prev[:0]
}

// forget drops what begin kept, so that nothing is copied from it.
func (w *taskWriter) forget() {
	w.prev, w.prevLabels = nil, nil
	w.prevRows, w.prevSels, w.prevSpans = nil, nil, nil
}

// writeTasks writes every per-task family, one family after another as
// the text format wants, from rows read once per task. When the tasks are
// those of the previous scrape, in the same order, a series whose values
// did not change is copied from that scrape's buffer: on a worker with
// many tasks most series (errors, peaks, commits, idle tasks) change
// seldom between scrapes.
func (w *taskWriter) writeTasks() {
	w.prevRows, w.rows = w.rows, w.prevRows[:0]
	w.prevSels, w.sels = w.sels, w.prevSels[:0]
	w.prevSpans, w.spans = w.spans, w.prevSpans[:0]
	for i := range w.stats.Tasks {
		t := &w.stats.Tasks[i]
		w.rows = append(w.rows, taskRow(t))
		w.sels = append(w.sels, selectorsOf(t))
	}
	if n := len(w.rows); cap(w.spans) >= n {
		w.spans = w.spans[:n]
	} else {
		w.spans = make([][len(taskFamilies)]lineSpan, n)
	}
	same := len(w.prevRows) == len(w.rows) && len(w.prevSpans) == len(w.rows) &&
		len(w.prev) <= math.MaxInt32 && string(w.prevLabels) == string(w.labels)
	for k := range taskFamilies {
		tf := &taskFamilies[k]
		w.header(tf.f)
		for i := range w.rows {
			if w.sels[i]&tf.sel == 0 {
				continue
			}
			start := len(w.b)
			v := w.rows[i][tf.col]
			if same && w.prevSels[i] == w.sels[i] && w.prevRows[i][tf.col] == v &&
				(tf.count < 0 || w.prevRows[i][tf.count] == w.rows[i][tf.count]) {
				sp := w.prevSpans[i][k]
				w.b = append(w.b, w.prev[sp.start:sp.end]...)
				w.spans[i][k] = lineSpan{int32(start), int32(len(w.b))}
				continue
			}
			l := w.taskLabels(i)
			w.b = append(w.b, tf.f.name...)
			if tf.count >= 0 {
				w.b = append(w.b, "_sum"...)
				w.b = append(w.b, l...)
				w.b = appendFixed(w.b, v, tf.scale)
				w.b = append(w.b, '\n')
				w.b = append(w.b, tf.f.name...)
				w.b = append(w.b, "_count"...)
				w.b = append(w.b, l...)
				w.b = strconv.AppendInt(w.b, w.rows[i][tf.count], 10)
			} else {
				w.b = append(w.b, l...)
				if tf.scale < 0 {
					w.b = strconv.AppendInt(w.b, v, 10)
				} else {
					w.b = appendFixed(w.b, v, tf.scale)
				}
			}
			w.b = append(w.b, '\n')
			w.spans[i][k] = lineSpan{int32(start), int32(len(w.b))}
		}
	}
}

// The statuses a connector or task can have, lower-case as Kafka Connect's
// status metric says them.
var statuses = []string{"unassigned", "running", "paused", "failed", "restarting", "stopped"}

// writeStates writes connector-metrics status, connector-task-metrics
// status, and the per-connector task counts of connect-worker-metrics.
func (w *taskWriter) writeStates() {
	conn := family{"kcd_connector_status", "gauge", "1 for the status this worker last reported of the connector it runs. Kafka Connect: connector-metrics status."}
	task := family{"kcd_connector_task_status", "gauge", "1 for the status this worker last reported of the task it runs. Kafka Connect: connector-task-metrics status."}
	w.header(conn)
	var lb []byte
	for _, s := range w.states {
		if s.ID.Task >= 0 {
			continue
		}
		lb = appendLabel(lb[:0], "connector", s.ID.Connector)
		lb = append(lb, ',')
		lb = appendLabel(lb, "status", statusName(s.State))
		w.line(conn.name, "", lb, 1)
	}
	w.header(task)
	for _, s := range w.states {
		if s.ID.Task < 0 {
			continue
		}
		lb = appendLabel(lb[:0], "connector", s.ID.Connector)
		lb = append(lb, `,task="`...)
		lb = strconv.AppendInt(lb, int64(s.ID.Task), 10)
		lb = append(lb, `",`...)
		lb = appendLabel(lb, "status", statusName(s.State))
		w.line(task.name, "", lb, 1)
	}
	// Per connector and status.
	counts := family{"kcd_worker_connector_tasks", "gauge", "Tasks of the connector on this worker, by status. Kafka Connect: connect-worker-metrics connector-running-task-count, connector-paused-task-count, connector-failed-task-count, connector-unassigned-task-count, connector-restarting-task-count (and connector-total-task-count as their sum)."}
	w.header(counts)
	if w.counts == nil {
		w.counts = map[string]*[8]int{}
	}
	clear(w.counts)
	for _, s := range w.states {
		if s.ID.Task < 0 {
			continue
		}
		n := w.counts[s.ID.Connector]
		if n == nil {
			n = new([8]int)
			w.counts[s.ID.Connector] = n
		}
		n[statusIndex(s.State)]++
	}
	for c, n := range w.counts {
		for k, st := range statuses {
			lb = appendLabel(lb[:0], "connector", c)
			lb = append(lb, ',')
			lb = appendLabel(lb, "status", st)
			w.line(counts.name, "", lb, float64(n[k]))
		}
	}
}

func statusIndex(state string) int {
	switch state { // the worker's own spelling first
	case "RUNNING":
		return 1
	case "PAUSED":
		return 2
	case "FAILED":
		return 3
	case "UNASSIGNED":
		return 0
	}
	for i, s := range statuses {
		if strings.EqualFold(s, state) {
			return i
		}
	}
	return len(statuses) // unknown: counted nowhere shown
}

// statusName is state lower-case, without allocating for the known ones.
func statusName(state string) string {
	if i := statusIndex(state); i < len(statuses) {
		return statuses[i]
	}
	return strings.ToLower(state)
}

// writeWorker writes connect-worker-metrics without labels.
func (w *taskWriter) writeWorker(s worker.Startups) {
	conns, tasks := 0, 0
	for _, u := range w.states {
		if u.ID.Task < 0 {
			conns++
		} else {
			tasks++
		}
	}
	for _, m := range []struct {
		f family
		v int64
	}{
		{family{"kcd_worker_connector_count", "gauge", "Connectors on this worker. Kafka Connect: connect-worker-metrics connector-count."}, int64(conns)},
		{family{"kcd_worker_task_count", "gauge", "Tasks on this worker. Kafka Connect: connect-worker-metrics task-count."}, int64(tasks)},
		{family{"kcd_worker_connector_startup_attempts_total", "counter", "Connector starts this worker attempted. Kafka Connect: connect-worker-metrics connector-startup-attempts-total."}, s.ConnectorAttempts},
		{family{"kcd_worker_connector_startup_success_total", "counter", "Connector starts that succeeded. Kafka Connect: connect-worker-metrics connector-startup-success-total."}, s.ConnectorSuccesses},
		{family{"kcd_worker_connector_startup_failure_total", "counter", "Connector starts that failed. Kafka Connect: connect-worker-metrics connector-startup-failure-total."}, s.ConnectorFailures},
		{family{"kcd_worker_task_startup_attempts_total", "counter", "Task starts this worker attempted. Kafka Connect: connect-worker-metrics task-startup-attempts-total."}, s.TaskAttempts},
		{family{"kcd_worker_task_startup_success_total", "counter", "Task starts that succeeded. Kafka Connect: connect-worker-metrics task-startup-success-total."}, s.TaskSuccesses},
		{family{"kcd_worker_task_startup_failure_total", "counter", "Task starts that failed. Kafka Connect: connect-worker-metrics task-startup-failure-total."}, s.TaskFailures},
	} {
		w.header(m.f)
		w.line(m.f.name, "", nil, float64(m.v))
	}
}
