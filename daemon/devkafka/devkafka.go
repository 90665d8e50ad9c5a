// Package devkafka runs franz-go's in-process Kafka-protocol broker (kfake)
// as the data plane of a trial node. It is for trying kcd out and for demos:
// it is not Apache Kafka and is never what kcd's Kafka-facing features are
// tested against.
package devkafka

import (
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/twmb/franz-go/pkg/kfake"
)

// Broker is a running embedded broker.
type Broker struct {
	cluster *kfake.Cluster
}

// Start starts a one-node broker on 127.0.0.1:port (0 picks a free port)
// that keeps its data under dir, so topics survive a restart.
func Start(dir string, port int, log *slog.Logger) (*Broker, error) {
	c, err := kfake.NewCluster(
		kfake.NumBrokers(1),
		kfake.Ports(port),
		kfake.DataDir(filepath.Clean(dir)),
		kfake.ClusterID("kcd-dev-kafka"),
		kfake.AllowAutoTopicCreation(),
		kfake.DefaultNumPartitions(1),
	)
	if err != nil {
		return nil, fmt.Errorf("start the embedded dev broker on 127.0.0.1:%d: %w", port, err)
	}
	b := &Broker{cluster: c}
	log.Warn("embedded dev broker started: for trying kcd out only, not a real Kafka",
		"addrs", b.Addrs(), "dir", dir)
	return b, nil
}

// Addrs are the broker's listen addresses, to bootstrap clients from.
func (b *Broker) Addrs() []string { return b.cluster.ListenAddrs() }

// Close stops the broker and flushes its data.
func (b *Broker) Close() { b.cluster.Close() }
