package testenv

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// These tests prove the test environment: each talks to one real service.

func TestIntegrationKafkaProduceConsume(t *testing.T) {
	brokers := Require(t, Kafka)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	topic := fmt.Sprintf("kcd-testenv-%d", time.Now().UnixNano())
	admin, err := kgo.NewClient(kgo.SeedBrokers(brokers))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	adm := kadm.NewClient(admin)
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, topic); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	t.Cleanup(func() { _, _ = adm.DeleteTopics(context.Background(), topic) })

	producer, err := kgo.NewClient(kgo.SeedBrokers(brokers), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	const n = 100
	for i := range n {
		rec := &kgo.Record{Key: []byte(fmt.Sprintf("k%d", i%7)), Value: []byte(fmt.Sprintf("v%d", i))}
		if err := producer.ProduceSync(ctx, rec).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}

	consumer, err := kgo.NewClient(kgo.SeedBrokers(brokers), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	seen := map[string]bool{}
	for len(seen) < n {
		fetches := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", len(seen), n, err)
		}
		fetches.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		fetches.EachRecord(func(r *kgo.Record) {
			if seen[string(r.Value)] {
				t.Errorf("record %s consumed twice", r.Value)
			}
			seen[string(r.Value)] = true
		})
	}
	for i := range n {
		if !seen[fmt.Sprintf("v%d", i)] {
			t.Errorf("record v%d lost", i)
		}
	}
}

func TestIntegrationMariaDB(t *testing.T) {
	db, err := sql.Open("mysql", Require(t, MySQLDSN))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := t.Context()
	var version string
	if err := db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
		t.Fatalf("query MariaDB: %v", err)
	}
	t.Logf("MariaDB %s", version)
	table := fmt.Sprintf("kcd_probe_%d", time.Now().UnixNano())
	if _, err := db.ExecContext(ctx, "CREATE TABLE "+table+" (k VARCHAR(64) PRIMARY KEY, v BIGINT)"); err != nil {
		t.Fatal(err)
	}
	defer db.ExecContext(context.Background(), "DROP TABLE "+table)
	if _, err := db.ExecContext(ctx, "INSERT INTO "+table+" VALUES (?, ?), (?, ?)", "a", 1, "b", 41); err != nil {
		t.Fatal(err)
	}
	var sum int64
	if err := db.QueryRowContext(ctx, "SELECT SUM(v) FROM "+table).Scan(&sum); err != nil || sum != 42 {
		t.Fatalf("sum %d, %v", sum, err)
	}
}

func TestIntegrationPostgres(t *testing.T) {
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, Require(t, PostgreDSN))
	if err != nil {
		t.Fatalf("connect to PostgreSQL: %v", err)
	}
	defer conn.Close(context.Background())
	var version string
	if err := conn.QueryRow(ctx, "SHOW server_version").Scan(&version); err != nil {
		t.Fatal(err)
	}
	t.Logf("PostgreSQL %s", version)
	var sum int64
	if err := conn.QueryRow(ctx, "SELECT SUM(x) FROM generate_series(1, $1::int) AS x", 100).Scan(&sum); err != nil || sum != 5050 {
		t.Fatalf("sum %d, %v", sum, err)
	}
}
