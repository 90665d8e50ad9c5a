package systemtest

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcd-project/kcd/internal/testenv"
)

const mirrorSource = "org.apache.kafka.connect.mirror.MirrorSourceConnector"

// mirrorFailoverBound is what the test asserts of the time from the kill -9
// of a worker to its tasks RUNNING elsewhere. The aim is 5 s; with
// kcd's defaults the coordinator moves a silent worker's tasks after
// session-timeout (3 s) + fence-margin (0.5 s), and the new worker's Java
// host starts the MirrorSourceTasks (consumer, admin client) on a 2-core
// machine shared with three JVMs: the bound leaves room for that.
const mirrorFailoverBound = 10 * time.Second

// mirrorConfig is a MirrorSourceConnector copying topic from the test
// Kafka to itself under the alias "src" (DefaultReplicationPolicy names
// the copy "src.<topic>"), with everything the test does not need off:
// offset syncs, topic config and ACL sync, topic refresh.
func mirrorConfig(brokers, topic string, tasks int) map[string]string {
	return map[string]string{
		"connector.class":                  mirrorSource,
		"tasks.max":                        fmt.Sprint(tasks),
		"source.cluster.alias":             "src",
		"target.cluster.alias":             "dst",
		"source.cluster.bootstrap.servers": brokers,
		"target.cluster.bootstrap.servers": brokers,
		"topics":                           topic,
		"replication.factor":               "1",
		"emit.offset-syncs.enabled":        "false",
		"emit.heartbeats.enabled":          "false",
		"emit.checkpoints.enabled":         "false",
		"sync.topic.configs.enabled":       "false",
		"sync.topic.acls.enabled":          "false",
		"refresh.topics.enabled":           "false",
		"refresh.groups.enabled":           "false",
		"key.converter":                    "org.apache.kafka.connect.converters.ByteArrayConverter",
		"value.converter":                  "org.apache.kafka.connect.converters.ByteArrayConverter",
	}
}

// TestIntegrationJavaHostMirrorFailover: Kafka Connect's
// MirrorSourceConnector (tasks.max=4) runs through the Java host on three
// kcd processes on the real Kafka, mirroring an 8-partition topic that a
// producer writes to all along. The coordinator spreads the 4 tasks (no
// worker holds all); a worker running tasks is killed with SIGKILL: its
// Java host exits with it, its tasks run elsewhere within
// mirrorFailoverBound, and once the producer stops every record of the
// source topic is in the mirrored topic, per partition in order (the first
// copies; the records after the last committed offset come again).
func TestIntegrationJavaHostMirrorFailover(t *testing.T) {
	bin := binary(t)
	brokers := testenv.Require(t, testenv.Kafka)
	args := javaHostArgs(t)
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()

	suffix := fmt.Sprintf("%x", rand.Uint64())
	topic := "kcd-systemtest-mirror-" + suffix
	mirrored := "src." + topic
	const partitions = 8
	dropTopicsAtEnd(t, brokers, topic, mirrored)
	adm := kadm.NewClient(kafkaClient(t, brokers))
	if _, err := adm.CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}

	c := StartCluster(t, bin, Options{Bootstrap: brokers, ExtraArgs: append(args, "--offset-flush-interval", "500ms")})
	lead, err := WaitLeader(ctx, c.Nodes()...)
	if err != nil {
		t.Fatal(err)
	}
	via := c.Node(lead)
	if err := WaitFor(ctx, 100*time.Millisecond, func() (bool, error) {
		n, err := AliveWorkers(ctx, via)
		return err == nil && n == 3, err
	}); err != nil {
		t.Fatalf("three workers did not register: %v", err)
	}

	// The producer: one record per partition every 10 ms, value
	// "p<partition>-<seq>", until stopped.
	pcl := kafkaClient(t, brokers, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	stopProducer := make(chan struct{})
	var produced sync.WaitGroup
	var produceErr error
	var lastSeq atomic.Int64 // of the newest records Kafka acknowledged
	produced.Go(func() {
		for seq := 0; ; seq++ {
			select {
			case <-stopProducer:
				return
			case <-time.After(10 * time.Millisecond):
			}
			recs := make([]*kgo.Record, partitions)
			for p := range partitions {
				recs[p] = &kgo.Record{Topic: topic, Partition: int32(p), Key: fmt.Appendf(nil, "k%d", p), Value: fmt.Appendf(nil, "p%d-%06d", p, seq)}
			}
			if err := pcl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				produceErr = err
				return
			}
			lastSeq.Store(int64(seq))
		}
	})
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			close(stopProducer)
			produced.Wait()
		}
	}
	defer stop()

	name := "mirror-" + suffix
	start := time.Now()
	createConnector(ctx, t, via, name, mirrorConfig(brokers, topic, 4))
	var by map[string][]int
	if err := WaitFor(ctx, 100*time.Millisecond, func() (bool, error) {
		st, err := statusOf(ctx, via, name)
		if err != nil {
			return false, err
		}
		var ok bool
		ok, by = runningOn(st, 4)
		return ok && st.Connector.State == "RUNNING", fmt.Errorf("status %+v", st)
	}); err != nil {
		t.Fatalf("the 4 mirror tasks are not RUNNING: %v", err)
	}
	t.Logf("4 MirrorSourceTasks RUNNING %v after the create; tasks per worker: %v", time.Since(start).Round(time.Millisecond), by)
	if len(by) < 2 {
		t.Fatalf("one worker holds all 4 tasks: %v", by)
	}

	// Let records flow, then kill -9 the worker with the most tasks, a
	// follower when there is a choice (the leader's failover adds an
	// election, which other tests cover).
	if err := WaitFor(ctx, 100*time.Millisecond, func() (bool, error) {
		return mirroredCount(ctx, adm, mirrored) >= 1000, nil
	}); err != nil {
		t.Fatalf("nothing reaches %s: %v", mirrored, err)
	}
	var victim *Node
	for _, n := range c.Nodes() {
		if len(by[workerOf(by, n)]) == 0 {
			continue
		}
		if victim == nil || (victim.ID == lead && n.ID != lead) ||
			(n.ID != lead) == (victim.ID != lead) && len(by[workerOf(by, n)]) > len(by[workerOf(by, victim)]) {
			victim = n
		}
	}
	if victim == nil {
		t.Fatalf("no node runs a task: %v", by)
	}
	host := javaHostPid(victim.PID())
	if host == 0 {
		t.Fatalf("node %d runs tasks %v but has no Java host child", victim.ID, by[workerOf(by, victim)])
	}
	for _, n := range c.Nodes() {
		if rss, err := ProcStatusBytes(javaHostPid(n.PID()), "VmRSS"); err == nil {
			t.Logf("node %d: Java host RSS %d MiB", n.ID, rss>>20)
		}
	}
	survivor := c.Except(victim.ID)[0]
	if survivor.ID == victim.ID || (victim.ID != lead && survivor.ID != lead) {
		survivor = c.Node(lead)
	}
	victim.Kill()
	killed := time.Now()
	t.Logf("killed node %d (tasks %v, Java host pid %d)", victim.ID, by[workerOf(by, victim)], host)

	if err := WaitFor(ctx, 50*time.Millisecond, func() (bool, error) {
		st, err := statusOf(ctx, survivor, name)
		if err != nil {
			return false, err
		}
		var ok bool
		ok, by = runningOn(st, 4, victim.RESTAddr)
		return ok, fmt.Errorf("status %+v", st)
	}); err != nil {
		t.Fatalf("the killed worker's tasks do not run elsewhere: %v", err)
	}
	failover := time.Since(killed)
	t.Logf("failover: the 4 tasks RUNNING on the survivors %v after the kill -9: %v", failover.Round(time.Millisecond), by)
	if failover > mirrorFailoverBound {
		t.Errorf("failover took %v, over the bound of %v", failover, mirrorFailoverBound)
	}
	if err := WaitFor(ctx, 50*time.Millisecond, func() (bool, error) { return !pidAlive(host), nil }); err != nil {
		t.Errorf("the killed node's Java host %d still runs", host)
	}

	// Keep producing until the survivors mirror records written after the
	// failover, then stop and check.
	after := lastSeq.Load()
	if err := WaitFor(ctx, 200*time.Millisecond, func() (bool, error) {
		got := readTopic(ctx, t, brokers, mirrored)
		for p := range int32(partitions) {
			vs := got[p]
			if len(vs) == 0 || mirrorSeq(vs[len(vs)-1]) <= after {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		t.Fatalf("the survivors mirror nothing written after the failover (seq %d): %v", after, err)
	}
	stop()
	if produceErr != nil {
		t.Fatalf("producer: %v", produceErr)
	}
	want := readTopic(ctx, t, brokers, topic)
	total := 0
	for _, vs := range want {
		total += len(vs)
	}
	drained := time.Now()
	var got map[int32][]string
	if err := WaitFor(ctx, 500*time.Millisecond, func() (bool, error) {
		got = readTopic(ctx, t, brokers, mirrored)
		for p, vs := range want {
			if len(firstCopiesOf(got[p])) < len(vs) {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		for p, vs := range want {
			t.Logf("partition %d: %d of %d mirrored", p, len(firstCopiesOf(got[p])), len(vs))
		}
		t.Fatalf("the mirrored topic lacks records: %v", err)
	}
	dups := 0
	for p, vs := range want {
		first := firstCopiesOf(got[p])
		for i, v := range vs {
			if first[i] != v {
				t.Fatalf("%s partition %d: record %d is %q, want %q (the first copies must keep the source's order)", mirrored, p, i, first[i], v)
			}
		}
		if len(first) != len(vs) {
			t.Fatalf("%s partition %d has records the source lacks: %q", mirrored, p, first[len(vs):])
		}
		dups += len(got[p]) - len(first)
	}
	t.Logf("%d records in %d partitions, all mirrored in order (%v after the producer stopped, %v from the create: %.0f records/s overall); %d duplicates from the replay after the kill",
		total, partitions, time.Since(drained).Round(time.Millisecond), time.Since(start).Round(time.Millisecond),
		float64(total)/time.Since(start).Seconds(), dups)
}

// workerOf returns the worker id in by that names node n.
func workerOf(by map[string][]int, n *Node) string {
	for w := range by {
		if strings.Contains(w, n.RESTAddr) {
			return w
		}
	}
	return n.RESTAddr
}

func mirroredCount(ctx context.Context, adm *kadm.Client, topic string) int64 {
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return 0
	}
	var n int64
	ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
	return n
}

// readTopic reads every partition of topic from the start to its end
// offsets and returns the values per partition. A record whose key is not
// the source's (k<partition>) fails the test.
func readTopic(ctx context.Context, t *testing.T, brokers, topic string) map[int32][]string {
	t.Helper()
	seeds := kgo.SeedBrokers(strings.Split(brokers, ",")...)
	acl, err := kgo.NewClient(seeds)
	if err != nil {
		t.Fatal(err)
	}
	defer acl.Close()
	ends, err := kadm.NewClient(acl).ListEndOffsets(ctx, topic)
	if err != nil || ends.Error() != nil {
		return nil
	}
	left := map[int32]int64{}
	offs := map[string]map[int32]kgo.Offset{topic: {}}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			left[o.Partition] = o.Offset
			offs[topic][o.Partition] = kgo.NewOffset().AtStart()
		}
	})
	out := map[int32][]string{}
	if len(left) == 0 {
		return out
	}
	cons, err := kgo.NewClient(seeds, kgo.ConsumePartitions(offs), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	// Control records (transactions) may end a partition below its end
	// offset: two quiet polls end the read too.
	for quiet := 0; len(left) > 0 && quiet < 2 && ctx.Err() == nil; {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := cons.PollFetches(pctx)
		cancel()
		if fs.NumRecords() == 0 {
			quiet++
			continue
		}
		quiet = 0
		fs.EachRecord(func(r *kgo.Record) {
			if want := fmt.Sprintf("k%d", r.Partition); !bytes.Equal(r.Key, []byte(want)) {
				t.Errorf("%s partition %d offset %d: key %q, want %q", topic, r.Partition, r.Offset, r.Key, want)
			}
			out[r.Partition] = append(out[r.Partition], string(r.Value))
			if r.Offset+1 >= left[r.Partition] {
				delete(left, r.Partition)
			}
		})
	}
	return out
}

// firstCopiesOf drops the values seen before, keeping the order.
func firstCopiesOf(vs []string) []string {
	seen := make(map[string]bool, len(vs))
	out := make([]string, 0, len(vs))
	for _, v := range vs {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// mirrorSeq is the sequence number of a producer value "p<partition>-<seq>".
func mirrorSeq(v string) int64 {
	_, s, _ := strings.Cut(v, "-")
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}
