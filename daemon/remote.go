package daemon

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/kcd-project/kcd/daemon/config"
	"github.com/kcd-project/kcd/daemon/connect"
	"github.com/kcd-project/kcd/daemon/connect/converter"
	"github.com/kcd-project/kcd/daemon/connectstore"
	"github.com/kcd-project/kcd/daemon/herder"
	"github.com/kcd-project/kcd/daemon/metrics"
	"github.com/kcd-project/kcd/daemon/restapi"
	"github.com/kcd-project/kcd/daemon/store/remotestore"
)

// startRemote wires a worker-only node: it holds no replica of the store,
// so its store is a remotestore over the REST API of the Raft nodes (its
// --seeds, and the members it learns from them). On it the node runs the
// herder (Kafka Connect's connector API, answered here, its writes going
// through the store) and the worker, whose member heartbeats the
// coordinator through the same nodes. kafkaSeeds are the data plane's
// brokers.
func (n *Node) startRemote(ctx context.Context, opts *restapi.Options, kafkaSeeds []string) error {
	// The store sticks to the first node that answers: from a seed picked
	// at random, worker-only nodes spread over the Raft nodes instead of
	// all reading from the first seed.
	seeds := slices.Clone(n.cfg.Seeds)
	rand.Shuffle(len(seeds), func(i, j int) { seeds[i], seeds[j] = seeds[j], seeds[i] })
	rs, err := remotestore.New(seeds, remotestore.Options{Logger: n.log.With("subsys", "remotestore"), Transport: n.remoteStoreTransport})
	if err != nil {
		return fmt.Errorf("store of a worker-only node: %w", err)
	}
	n.store = connectstore.Seal(metrics.TimeStore(rs, n.storeTimer), n.configKeys)
	opts.Cluster = seedCluster{rs: rs}
	opts.Connect = herder.New(connectstore.New(n.store), herder.Options{
		Converters:           converter.Classes(),
		HeaderConverters:     append(converter.Classes(), herder.SimpleHeaderConverter),
		ConverterConfig:      converterConfig,
		MaxTasksPerConnector: n.cfg.MaxTasksPerConnector,
		NoTopicTracking:      !n.cfg.TopicTrackingEnable,
		NoTopicTrackingReset: !n.cfg.TopicTrackingAllowReset,
		Files:                n.files,
		Clients:              n.herderClients(),
		Logger:               n.log.With("subsys", "herder"),
		Owners:               n.unitOwners,
	})
	if n.cfg.HasRole(config.RoleWorker) {
		if err := n.startWorker(ctx, kafkaSeeds, rs.Endpoints); err != nil {
			return err
		}
		opts.Worker = n
		opts.HealthChecks = append(opts.HealthChecks, n.workerHealth)
	}
	return nil
}

// converterConfig is the settings of a converter class kcd ships, for the
// herder (herder.Options.ConverterConfig).
func converterConfig(class string) connect.ConfigDef {
	def, _ := converter.ConfigDef(class)
	return def
}
