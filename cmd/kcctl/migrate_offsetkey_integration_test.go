package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcd-project/kcd/internal/testenv"
	"github.com/kcd-project/kcd/migrate"
)

// TestIntegrationMigrateOffsetKeysThroughKcd: source offsets whose
// partitions have several fields, written by the real Kafka Connect worker,
// go into kcd with from-kafka and out into new topics with to-kafka under
// the key bytes Kafka Connect wrote, including one whose field order kcd
// cannot compute (two fields of one HashMap bucket keep the order they were
// put in).
func TestIntegrationMigrateOffsetKeysThroughKcd(t *testing.T) {
	brokers := testenv.Require(t, testenv.Kafka)
	kc := restAPI{t: t, base: testenv.Require(t, testenv.ConnectURL)}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	adm := kafkaAdmin(t, brokers)

	prefix := fmt.Sprintf("kcd-offkey-%08x-", rand.Uint32())
	src := prefix + "src"
	back := migrate.Topics{Config: prefix + "configs", Offset: prefix + "offsets", Status: prefix + "status"}
	t.Cleanup(func() {
		kc.try("DELETE", "/connectors/"+src)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_, _ = adm.DeleteTopics(ctx, back.Config, back.Offset, back.Status)
	})
	file := filepath.Join(t.TempDir(), "in.txt")
	kc.must("POST", "/connectors", map[string]any{"name": src, "initial_state": "STOPPED",
		"config": map[string]string{"connector.class": fileSource, "tasks.max": "1", "file": file, "topic": prefix + "lines"}})
	waitFor(ctx, t, "Kafka Connect's "+src+" stopped", func() (bool, any) {
		st := kc.statuses(prefix)
		return st[src] == "STOPPED", st
	})
	// Raw JSON: the body's field order reaches Kafka Connect as written.
	patch := json.RawMessage(fmt.Sprintf(`{"offsets":[{"partition":{"filename":%q,"database":"db1","server":"srv1"},"offset":{"position":7}},`+
		`{"partition":{"filename":%q,"BB":"b","Aa":"a"},"offset":{"position":9}}]}`, file, file))
	kc.must("PATCH", "/connectors/"+src+"/offsets", patch)
	// Kafka Connect's keys (TestIntegrationOffsetKeyBytesRoundTrip in
	// migrate reads them off its topic): HashMap order, and "BB" before
	// "Aa", which share a bucket, as the body put them.
	want := []string{
		fmt.Sprintf(`[%q,{"BB":"b","Aa":"a","filename":%q}]`, src, file),
		fmt.Sprintf(`[%q,{"server":"srv1","database":"db1","filename":%q}]`, src, file),
	}

	kcdURL := startNodeOnKafka(t, brokers)
	kcd := restAPI{t: t, base: kcdURL}
	if code, out, errOut := kcctl(t, "--server", kcdURL, "migrate", "from-kafka", "--bootstrap-servers", brokers,
		"--include", "^"+prefix, "-o", "json"); code != 0 {
		t.Fatalf("from-kafka: exit %d\n%s\n%s", code, out, errOut)
	}
	if o := kcd.offsets(src); len(o.Offsets) != 2 {
		t.Fatalf("kcd's offsets of %s: %+v", src, o)
	}

	if code, out, errOut := kcctl(t, "--server", kcdURL, "migrate", "to-kafka", "--bootstrap-servers", brokers,
		"--include", "^"+prefix, "--config-topic", back.Config, "--offset-topic", back.Offset, "--status-topic", back.Status,
		"--replication-factor", "1", "-o", "json"); code != 0 {
		t.Fatalf("to-kafka: exit %d\n%s\n%s", code, out, errOut)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers), kgo.ConsumeTopics(back.Offset), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got []string
	waitFor(ctx, t, "the offsets records to-kafka wrote", func() (bool, any) {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		cl.PollFetches(pctx).EachRecord(func(r *kgo.Record) {
			if strings.HasPrefix(string(r.Key), `["`+src+`",`) {
				got = append(got, string(r.Key))
			}
		})
		slices.Sort(got)
		return reflect.DeepEqual(got, want), got
	})
}
