package worker

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	mathrand "math/rand/v2"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcd-project/kcd/store"
)

// Exactly-once source support, as Kafka Connect's: each source task
// produces through its own transactional producer whose transactional id
// is the same on every worker (kcd-<cluster>-<connector>-<task>). Starting
// the task initialises the producer id, which bumps the id's epoch: the
// broker then refuses the produce and commit requests of the task's
// previous run wherever it still runs, and aborts its open transaction.
// A run refused so is fenced: it stops without reporting a failure.
// Source offsets are stored only once the transaction of their records
// committed; they are not part of it, so a crash between the commit and
// the store write produces those records again (at least once).

// errFenced ends a source task whose producer the broker fenced: another
// run of the task initialised the same transactional id since.
var errFenced = errors.New("fenced: a newer run of the task produces with its transactional id")

// isFencing tells whether err is the broker refusing a fenced producer.
// An epoch bump by the broker after a transaction timed out looks the
// same; the task then starts again as after any fencing.
func isFencing(err error) bool {
	return errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch) || errors.Is(err, errFenced)
}

func fenced(err error) error {
	if errors.Is(err, errFenced) {
		return err
	}
	return fmt.Errorf("%w (%w)", errFenced, err)
}

// txnPrefixKey holds the first part of every transactional id of the
// cluster: "kcd-" and 8 random hex digits, written once by the first
// worker that needs it, so that two kcd clusters on one Kafka never fence
// each other's tasks of the same name.
const txnPrefixKey = "kcd/transactional-id-prefix"

// transactionalPrefix returns the cluster's transactional id prefix,
// creating it on first use.
func (w *Worker) transactionalPrefix(ctx context.Context) (string, error) {
	w.txnMu.Lock()
	defer w.txnMu.Unlock()
	raw := w.store.Raw()
	for w.txnPrefix == "" {
		kv, ok, err := raw.Get(ctx, txnPrefixKey)
		if err != nil {
			return "", fmt.Errorf("read %s: %w", txnPrefixKey, err)
		}
		if ok {
			w.txnPrefix = string(kv.Value)
			break
		}
		var b [4]byte
		_, _ = rand.Read(b[:])
		v := "kcd-" + hex.EncodeToString(b[:])
		_, ok, err = raw.Batch(ctx, []store.Cond{{Key: txnPrefixKey}}, []store.Op{store.Put(txnPrefixKey, []byte(v))})
		if err != nil {
			return "", fmt.Errorf("write %s: %w", txnPrefixKey, err)
		}
		if ok {
			w.txnPrefix = v
		}
		// Otherwise another worker wrote one first: read it.
	}
	return w.txnPrefix, nil
}

// maxTxnName is the most bytes of a connector name that go into a
// transactional id as they are; a longer name is cut and a hash of it
// appended, so that ids stay short and distinct.
const maxTxnName = 128

// transactionalID is a task's transactional id: Kafka Connect's
// ${groupId}-${connector}-${taskId}, with the cluster's prefix as group.
func transactionalID(prefix, connector string, task int) string {
	name := connector
	if len(name) > maxTxnName {
		cut := maxTxnName - 17
		for cut > 0 && !utf8.RuneStart(name[cut]) {
			cut--
		}
		sum := sha256.Sum256([]byte(connector))
		name = name[:cut] + "-" + hex.EncodeToString(sum[:8])
	}
	return prefix + "-" + name + "-" + strconv.Itoa(task)
}

// txnTimeout is the producer's transaction.timeout.ms: how long the broker
// lets a transaction of the task stay open before it aborts it (and how
// long, at most, read_committed consumers wait behind the open transaction
// of a task that died and runs nowhere). Kafka Connect's producer default,
// 60 s, or twice an interval boundary when that is longer.
func txnTimeout(s settings) time.Duration {
	d := time.Minute
	if s.intervalBoundary {
		d = max(d, 2*s.txnInterval)
	}
	return d
}

// openTransactional makes the task's transactional producer and
// initialises its producer id, which fences the task's previous run. It
// does so only while this worker owns the task: a worker that does not
// must not fence the one that does. ok is false when the task must stop.
func (st *sourceRun) openTransactional() (ok bool, err error) {
	tr := st.tr
	prefix, err := tr.w.transactionalPrefix(tr.ctx)
	if err != nil {
		if tr.ctx.Err() != nil {
			return false, nil
		}
		return false, err
	}
	id := transactionalID(prefix, tr.id.Connector, tr.id.Task)
	opts := tr.w.producerOpts(tr.settings.producer, true, tr.w.cfg.Limits.TaskInFlightRecords, fmt.Sprintf("connector-producer-%s-%d", tr.id.Connector, tr.id.Task))
	opts = append(opts, kgo.TransactionalID(id), kgo.TransactionTimeout(txnTimeout(tr.settings)),
		// Initialising the id aborts the previous run's open transaction
		// first (CONCURRENT_TRANSACTIONS until the markers are written):
		// retry at Java's pace, not franz-go's 250 ms doubling, so that a
		// task taken over from a dead worker starts within milliseconds.
		kgo.RetryBackoffFn(txnRetryBackoff))
	if st.client, err = tr.w.newClient(opts...); err != nil {
		return false, fmt.Errorf("producer: %w", err)
	}
	tr.setProducer(st.client)
	st.txn = true
	st.tracker.transactional()
	if ok, err := tr.waitClaim(); !ok {
		return false, err
	}
	if _, _, err := st.client.ProducerID(tr.ctx); err != nil {
		if tr.ctx.Err() != nil {
			return false, nil
		}
		return false, fmt.Errorf("initialize transactional producer %s: %w", id, err)
	}
	tr.log.Debug("transactional producer ready", "transactional_id", id)
	return true, nil
}

// begin opens a transaction unless one is open.
func (st *sourceRun) begin() error {
	if st.inTxn {
		return nil
	}
	if err := st.client.BeginTransaction(); err != nil {
		if isFencing(err) {
			return fenced(err)
		}
		return fmt.Errorf("begin transaction: %w", err)
	}
	st.inTxn, st.txnFrom = true, time.Now()
	return nil
}

// commitDue tells whether the open transaction is to be committed now:
// after every Poll batch (transaction.boundary=poll), or once it is older
// than the interval (interval), or before the task waits while paused.
func (st *sourceRun) commitDue() bool {
	s := st.tr.settings
	return !s.intervalBoundary || st.tr.paused.Load() || time.Since(st.txnFrom) >= s.txnInterval
}

// commitTxn waits until Kafka answered for every record of the open
// transaction and commits it; then the offsets of its records may be
// stored. A record Kafka refused (unless tolerated) fails the commit.
func (st *sourceRun) commitTxn(ctx context.Context) error {
	if st.inTxn {
		if err := st.client.Flush(ctx); err != nil {
			return err
		}
		if err := st.failure(); err != nil {
			return err
		}
		if err := st.client.EndTransaction(ctx, kgo.TryCommit); err != nil {
			// INVALID_TXN_STATE: the coordinator ended the transaction
			// without this producer (kfake answers so where Kafka answers
			// PRODUCER_FENCED).
			if isFencing(err) || errors.Is(err, kerr.InvalidTxnState) {
				return fenced(err)
			}
			return fmt.Errorf("commit transaction: %w", err)
		}
		st.inTxn = false
		if st.tr.settings.intervalBoundary {
			// Transactions of an interval are as rare as offset stores:
			// store their offsets now, as Kafka Connect commits them with
			// each transaction, rather than up to a flush interval later.
			st.storeSoon()
		}
	}
	st.tracker.seal()
	return nil
}

// abortTxn aborts the open transaction: its records never become visible
// to read_committed consumers, and their offsets are not stored.
func (st *sourceRun) abortTxn(ctx context.Context) {
	defer st.tracker.discard()
	if !st.inTxn {
		return
	}
	st.inTxn = false
	if err := st.client.AbortBufferedRecords(ctx); err != nil {
		return
	}
	if err := st.client.EndTransaction(ctx, kgo.TryAbort); err != nil && !isFencing(err) && ctx.Err() == nil {
		st.tr.log.Warn("abort transaction", "err", err)
	}
}

// endTxn ends the open transaction when the task stops (err: why its loop
// ended). A clean stop commits it while the worker owns the task under the
// run's claim; a failed run that owns it so aborts it. A run fenced by the
// broker, or that no longer owns the task under its claim, abandons it and
// sends nothing more: franz-go's abort may re-initialise the producer id
// (after a failed batch or request), and an InitProducerID with this
// producer id fences, whatever its epoch, a transaction the task's current
// run has open. The broker aborts the abandoned transaction when the next
// run initialises the id, or after the transaction timeout.
func (st *sourceRun) endTxn(err error) {
	tr := st.tr
	ctx, cancel := context.WithTimeout(tr.hard, tr.w.cfg.ShutdownTimeout)
	defer cancel()
	// A task being handed over is still this worker's until its run has
	// stopped: it commits, so the next owner resumes from its offsets.
	a := tr.w.cfg.Assignment
	owned := (a.Task(tr.id.Connector, tr.id.Task) || releasing(a, tr.id.Connector, tr.id.Task)) && !tr.superseded()
	if err == nil && owned {
		if err = st.commitTxn(ctx); err == nil {
			return
		}
		if !isFencing(err) {
			tr.log.Warn("commit transaction at stop; aborting it", "err", err)
		}
	}
	if !owned || isFencing(err) || isFencing(st.failure()) {
		// Records still buffered go too, so that the producer sends
		// nothing more before it is closed.
		st.client.UnsafeAbortBufferedRecords()
		st.tracker.discard()
		return
	}
	st.abortTxn(ctx)
}

// txnRetryBackoff is a transactional producer's backoff between retries:
// 20 ms doubling up to 500 ms, with ±20 % jitter.
func txnRetryBackoff(fails int) time.Duration {
	d := 20 * time.Millisecond << min(max(fails-1, 0), 5)
	d = min(d, 500*time.Millisecond)
	return time.Duration(float64(d) * (0.8 + 0.4*mathrand.Float64()))
}
