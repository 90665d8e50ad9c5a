package worker

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/kcd-project/kcd/daemon/connect"
	"github.com/kcd-project/kcd/daemon/connectstore"
)

// sinkState is the supervisor's view of a sink connector's partitions: it
// lists them in the background (now and then, to follow new partitions and
// topics) and spreads them over the tasks.
type sinkState struct {
	parts    []connect.TopicPartition
	known    bool // parts come from a successful listing
	listing  bool
	nextList time.Time
	listed   chan listResult
	// gen counts the configs; a listing made for an older one is dropped.
	gen int
}

type listResult struct {
	gen     int
	parts   []connect.TopicPartition
	missing []string // named topics that do not exist (yet)
	err     error
}

// reset forgets the partitions: the topics may have changed.
func (ss *sinkState) reset() {
	ss.gen++
	ss.parts, ss.known, ss.nextList = nil, false, time.Time{}
}

// listSoon is the relisting interval while topics are missing or listing
// fails, when that is shorter than Config.SinkRelistInterval.
const listSoon = 5 * time.Second

// partsFor returns the partitions of task id among tasks, nil while they
// are not known.
func (ss *sinkState) partsFor(id, tasks int) []connect.TopicPartition {
	if !ss.known || id >= tasks {
		return nil
	}
	return SplitPartitions(ss.parts, tasks)[id]
}

func (ss *sinkState) apply(s *supervisor, res listResult) {
	ss.listing = false
	if res.gen != ss.gen {
		return // for an older config: list again
	}
	next := s.w.cfg.SinkRelistInterval
	switch {
	case res.err != nil:
		s.log.Warn("list the partitions of the sink's topics", "err", res.err)
		next = min(next, listSoon)
	default:
		if len(res.missing) > 0 {
			next = min(next, listSoon)
		}
		if !ss.known || !slices.Equal(ss.parts, res.parts) {
			s.log.Info("sink partitions", "partitions", len(res.parts), "missing_topics", res.missing)
		}
		ss.parts, ss.known = res.parts, true
	}
	ss.nextList = time.Now().Add(next)
}

// reconcileSink lists partitions when due and hands each local task its
// share. A partition that moves from one task to another is first revoked
// (committed and closed) everywhere, then assigned, so that the new owner
// starts from the old owner's last offset.
func (s *supervisor) reconcileSink(ctx context.Context) {
	ss := &s.sink
	if s.plugin == nil || s.plugin.Type != connect.PluginSink || s.spec.target == connectstore.TargetStopped {
		ss.nextList = time.Time{}
		return
	}
	runs := map[int]*taskRun{}
	for id, sl := range s.slots {
		if sl.run != nil {
			runs[id] = sl.run
		}
	}
	if len(runs) == 0 {
		ss.nextList = time.Time{}
		return
	}
	if !ss.listing && !time.Now().Before(ss.nextList) {
		ss.listing = true
		ss.nextList = time.Time{}
		go func(st settings, gen int) {
			lctx, cancel := context.WithTimeout(ctx, 15*time.Second)
			defer cancel()
			parts, missing, err := s.w.listPartitions(lctx, st)
			select {
			case ss.listed <- listResult{gen, parts, missing, err}:
			case <-ctx.Done():
			}
		}(s.settings, ss.gen)
	}
	if !ss.known {
		return
	}
	split := SplitPartitions(ss.parts, len(s.spec.tasks.Tasks))
	var waits []*taskRun
	var chans []<-chan struct{}
	for id, r := range runs {
		if id >= len(split) || !slices.Equal(r.assigned, split[id]) {
			keep := intersect(r.assigned, at(split, id))
			if len(keep) != len(r.assigned) {
				waits, chans = append(waits, r), append(chans, r.setWant(keep))
			}
		}
	}
	deadline := time.After(2 * s.w.cfg.ShutdownTimeout)
	for i, r := range waits {
		select {
		case <-chans[i]:
		case <-r.done:
		case <-deadline:
			s.log.Warn("a sink task did not release its partitions in time", "task", r.id.Task)
		}
	}
	for id, r := range runs {
		// A task whose share is empty is told so too: it then knows it
		// has no partitions (and no lag), rather than none known yet.
		if want := at(split, id); !r.wished || !slices.Equal(r.assigned, want) {
			r.setWant(want)
		}
	}
}

func at(split [][]connect.TopicPartition, id int) []connect.TopicPartition {
	if id < len(split) {
		return split[id]
	}
	return nil
}

// intersect keeps the partitions of a (sorted) that are in b.
func intersect(a, b []connect.TopicPartition) []connect.TopicPartition {
	var out []connect.TopicPartition
	for _, tp := range a {
		if _, ok := slices.BinarySearchFunc(b, tp, compareTP); ok {
			out = append(out, tp)
		}
	}
	return out
}

// listPartitions lists the partitions of a sink's topics: those named by
// topics, or those matching topics.regex (internal topics excluded).
func (w *Worker) listPartitions(ctx context.Context, st settings) (parts []connect.TopicPartition, missing []string, err error) {
	var re *regexp.Regexp
	if st.topicsRegex != "" {
		if re, err = regexp.Compile("^(?:" + st.topicsRegex + ")$"); err != nil {
			return nil, nil, fmt.Errorf("topics.regex: %w", err)
		}
	}
	if re == nil && len(st.topics) == 0 {
		return nil, nil, nil
	}
	tds, err := w.admin.ListTopics(ctx, st.topics...)
	if err != nil {
		return nil, nil, err
	}
	for _, td := range tds.Sorted() {
		if re != nil && (td.IsInternal || !re.MatchString(td.Topic)) {
			continue
		}
		if td.Err != nil {
			missing = append(missing, td.Topic)
			continue
		}
		for _, p := range td.Partitions.Sorted() {
			parts = append(parts, connect.TopicPartition{Topic: td.Topic, Partition: p.Partition})
		}
	}
	if re == nil {
		for _, t := range st.topics {
			if _, ok := tds[t]; !ok {
				missing = append(missing, t)
			}
		}
	}
	slices.SortFunc(parts, compareTP)
	return parts, missing, nil
}
