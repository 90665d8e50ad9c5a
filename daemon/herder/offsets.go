package herder

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"

	"github.com/kcd-project/kcd/daemon/connect"
	"github.com/kcd-project/kcd/daemon/connectstore"
	"github.com/kcd-project/kcd/store"
)

// The keys of a sink connector's offsets in the REST API.
const (
	kafkaTopic     = "kafka_topic"
	kafkaPartition = "kafka_partition"
	kafkaOffset    = "kafka_offset"
)

// Offsets returns a connector's offsets: for a source connector every
// source partition it stored, for a sink connector the next offset of each
// topic-partition.
func (h *Herder) Offsets(ctx context.Context, name string) (ConnectorOffsets, error) {
	cfg, _, err := h.config(ctx, name, msgNotFound)
	if err != nil {
		return ConnectorOffsets{}, err
	}
	p, ok := connect.LookupConfig(cfg)
	if !ok {
		return ConnectorOffsets{}, fmt.Errorf("read the offsets of connector %s: %s", name, pluginNotFound(cfg[keyConnectorClass]))
	}
	out := ConnectorOffsets{Offsets: []ConnectorOffset{}}
	if p.Type == connect.PluginSink {
		offs, err := h.store.SinkOffsets(ctx, name)
		if err != nil {
			return ConnectorOffsets{}, fmt.Errorf("read the offsets of connector %s: %w", name, err)
		}
		slices.SortFunc(offs, func(a, b connectstore.SinkOffset) int {
			return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
		})
		for _, o := range offs {
			out.Offsets = append(out.Offsets, ConnectorOffset{
				Partition: map[string]any{kafkaTopic: o.Topic, kafkaPartition: o.Partition},
				Offset:    map[string]any{kafkaOffset: o.Offset},
			})
		}
		return out, nil
	}
	offs, err := h.store.SourceOffsets(ctx, name)
	if err != nil {
		return ConnectorOffsets{}, fmt.Errorf("read the offsets of connector %s: %w", name, err)
	}
	for _, o := range offs {
		out.Offsets = append(out.Offsets, ConnectorOffset{Partition: o.Partition, Offset: o.Offset})
	}
	return out, nil
}

const (
	msgAltered         = "The offsets for this connector have been altered successfully"
	msgAlteredExternal = "The Connect framework-managed offsets for this connector have been altered successfully. However, if this connector manages offsets externally, they will need to be manually altered in the system that the connector uses."
	msgReset           = "The offsets for this connector have been reset successfully"
	msgResetExternal   = "The Connect framework-managed offsets for this connector have been reset successfully. However, if this connector manages offsets externally, they will need to be manually reset in the system that the connector uses."
)

// AlterOffsets sets (or, for a nil offset, resets) the given partitions'
// offsets of a stopped connector.
func (h *Herder) AlterOffsets(ctx context.Context, name string, offsets []ConnectorOffset) (Message, error) {
	if len(offsets) == 0 {
		return Message{}, errorf(ErrBadRequest, "Partitions / offsets need to be provided for an alter offsets request")
	}
	p, cfg, err := h.stoppedConnector(ctx, name)
	if err != nil {
		return Message{}, err
	}
	var confirmed bool
	if p.Type == connect.PluginSink {
		puts, dels, err := parseSinkOffsets(offsets)
		if err != nil {
			return Message{}, err
		}
		if confirmed, err = alterOffsets(p, cfg, sinkPartitionOffsets(puts, dels)); err != nil {
			return Message{}, err
		}
		if err := h.writeSinkOffsets(ctx, name, puts, dels); err != nil {
			return Message{}, err
		}
	} else {
		var src []connectstore.SourceOffset
		for _, o := range offsets {
			if o.Partition == nil {
				return Message{}, errorf(ErrBadRequest, "The partition for a source connector offset cannot be null or missing")
			}
			for _, m := range []map[string]any{o.Partition, o.Offset} {
				if err := connectstore.CheckOffsetFormat(m); err != nil {
					return Message{}, errorf(ErrBadRequest, "%v", err)
				}
			}
			src = append(src, connectstore.SourceOffset{Partition: o.Partition, Offset: o.Offset})
		}
		changes := make([]connect.PartitionOffset, len(src))
		for i, o := range src {
			changes[i] = connect.PartitionOffset{Partition: o.Partition, Offset: o.Offset}
		}
		if confirmed, err = alterOffsets(p, cfg, changes); err != nil {
			return Message{}, err
		}
		if err := h.store.PutSourceOffsets(ctx, name, src, nil); err != nil {
			return Message{}, fmt.Errorf("alter the offsets of connector %s: %w", name, err)
		}
	}
	h.log.Info("connector offsets altered", "connector", name, "partitions", len(offsets))
	if confirmed {
		return Message{Message: msgAltered}, nil
	}
	return Message{Message: msgAlteredExternal}, nil
}

// ResetOffsets removes all offsets of a stopped connector.
func (h *Herder) ResetOffsets(ctx context.Context, name string) (Message, error) {
	p, cfg, err := h.stoppedConnector(ctx, name)
	if err != nil {
		return Message{}, err
	}
	var confirmed bool
	if _, ok := p.New().(connect.OffsetAlterer); ok {
		current, err := h.Offsets(ctx, name)
		if err != nil {
			return Message{}, err
		}
		resets := make([]connect.PartitionOffset, len(current.Offsets))
		for i, o := range current.Offsets {
			resets[i] = connect.PartitionOffset{Partition: o.Partition}
		}
		if confirmed, err = alterOffsets(p, cfg, resets); err != nil {
			return Message{}, err
		}
	}
	if err := h.store.DeleteOffsets(ctx, name); err != nil {
		return Message{}, fmt.Errorf("reset the offsets of connector %s: %w", name, err)
	}
	h.log.Info("connector offsets reset", "connector", name)
	if confirmed {
		return Message{Message: msgReset}, nil
	}
	return Message{Message: msgResetExternal}, nil
}

// stoppedConnector returns the plugin and config of a connector whose
// offsets may change: its target state is STOPPED, it has no task configs,
// and no task reports running.
func (h *Herder) stoppedConnector(ctx context.Context, name string) (*connect.Plugin, map[string]string, error) {
	cfg, _, err := h.config(ctx, name, msgNotFound)
	if err != nil {
		return nil, nil, err
	}
	p, ok := connect.LookupConfig(cfg)
	if !ok {
		return nil, nil, fmt.Errorf("change the offsets of connector %s: %s", name, pluginNotFound(cfg[keyConnectorClass]))
	}
	target, err := h.store.Target(ctx, name)
	if err != nil {
		return nil, nil, fmt.Errorf("read the target state of connector %s: %w", name, err)
	}
	tasks, err := h.store.Tasks(ctx, name)
	if err != nil {
		return nil, nil, fmt.Errorf("read the tasks of connector %s: %w", name, err)
	}
	running, err := h.tasksMayCommit(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	if target != connectstore.TargetStopped || len(tasks.Tasks) > 0 || running {
		return nil, nil, errorf(ErrBadRequest, "Connectors must be in the STOPPED state before their offsets can be modified. This can be done for the specified connector by issuing a 'PUT' request to the '/connectors/%s/stop' endpoint", name)
	}
	return p, cfg, nil
}

// tasksMayCommit tells whether a task of the connector may still commit
// offsets. With the coordinator's owners: while a task owns its unit.
// Once the coordinator has dropped the unit, the store refuses the task's
// commits (they are fenced on the owner key), whatever status it reported
// last: a stopped connector's last task statuses may stay behind. Without
// owners (a herder on its own): while a task's status says it runs.
func (h *Herder) tasksMayCommit(ctx context.Context, name string) (bool, error) {
	if h.opts.Owners != nil {
		owners, _, err := h.opts.Owners(ctx, name)
		if err != nil {
			return false, fmt.Errorf("read the owners of connector %s: %w", name, err)
		}
		for id := range owners {
			if id >= 0 {
				return true, nil
			}
		}
		return false, nil
	}
	st, err := h.store.Statuses(ctx, name)
	if err != nil {
		return false, fmt.Errorf("read the status of connector %s: %w", name, err)
	}
	for _, t := range st.Tasks {
		switch t.State {
		case connectstore.StateRunning, connectstore.StatePaused, connectstore.StateRestarting:
			return true, nil
		}
	}
	return false, nil
}

// alterOffsets runs the connector's own check of an offsets change
// (connect.OffsetAlterer) on a fresh instance, as Kafka Connect's worker
// does; a connector without one accepts any change without confirming it.
// A refusal is the client's mistake: 400 with the connector's message.
func alterOffsets(p *connect.Plugin, cfg map[string]string, offsets []connect.PartitionOffset) (bool, error) {
	a, ok := p.New().(connect.OffsetAlterer)
	if !ok {
		return false, nil
	}
	confirmed, err := a.AlterOffsets(cfg, offsets)
	if err != nil {
		return false, errorf(ErrBadRequest, "%v", err)
	}
	return confirmed, nil
}

// sinkPartitionOffsets is a sink's parsed offsets change as its connector
// sees it (connect.PartitionOffset).
func sinkPartitionOffsets(puts, dels []connectstore.SinkOffset) []connect.PartitionOffset {
	out := make([]connect.PartitionOffset, 0, len(puts)+len(dels))
	for _, o := range puts {
		out = append(out, connect.PartitionOffset{
			Partition: map[string]any{kafkaTopic: o.Topic, kafkaPartition: o.Partition},
			Offset:    map[string]any{kafkaOffset: o.Offset},
		})
	}
	for _, o := range dels {
		out = append(out, connect.PartitionOffset{Partition: map[string]any{kafkaTopic: o.Topic, kafkaPartition: o.Partition}})
	}
	return out
}

// parseSinkOffsets is Kafka Connect's SinkUtils.parseSinkConnectorOffsets:
// partitions and offsets may be numbers or numeric strings.
func parseSinkOffsets(offsets []ConnectorOffset) (puts []connectstore.SinkOffset, dels []connectstore.SinkOffset, err error) {
	for _, o := range offsets {
		if o.Partition == nil {
			return nil, nil, errorf(ErrBadRequest, "The partition for a sink connector offset cannot be null or missing")
		}
		topicV, hasTopic := o.Partition[kafkaTopic]
		partV, hasPart := o.Partition[kafkaPartition]
		if !hasTopic || !hasPart {
			return nil, nil, errorf(ErrBadRequest, "The partition for a sink connector offset must contain the keys '%s' and '%s'", kafkaTopic, kafkaPartition)
		}
		topic, ok := topicV.(string)
		if !ok {
			return nil, nil, errorf(ErrBadRequest, "Kafka topic names must be valid strings and may not be null")
		}
		if partV == nil {
			return nil, nil, errorf(ErrBadRequest, "Kafka partitions must be valid numbers and may not be null")
		}
		part, err := strconv.ParseInt(scalarText(partV), 10, 32)
		if err != nil || part < 0 {
			return nil, nil, errorf(ErrBadRequest, "Failed to parse the following Kafka partition value in the provided offsets: '%s'. Partition values for sink connectors need to be integers.", scalarText(partV))
		}
		so := connectstore.SinkOffset{Topic: topic, Partition: int32(part)}
		if o.Offset == nil {
			dels = append(dels, so)
			continue
		}
		offV, ok := o.Offset[kafkaOffset]
		if !ok {
			return nil, nil, errorf(ErrBadRequest, "The offset for a sink connector should either be null or contain the key '%s'", kafkaOffset)
		}
		so.Offset, err = strconv.ParseInt(scalarText(offV), 10, 64)
		if err != nil || so.Offset < 0 {
			return nil, nil, errorf(ErrBadRequest, "Failed to parse the following Kafka offset value in the provided offsets: '%s'. Offset values for sink connectors need to be integers.", scalarText(offV))
		}
		puts = append(puts, so)
	}
	return puts, dels, nil
}

// scalarText is Java's toString of a JSON scalar.
func scalarText(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		return v
	case json.Number:
		return v.String()
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}

// writeSinkOffsets stores and removes sink offsets in one atomic batch;
// the workers mirror them to the connector's consumer group.
func (h *Herder) writeSinkOffsets(ctx context.Context, name string, puts, dels []connectstore.SinkOffset) error {
	if len(puts)+len(dels) > store.MaxBatchOps {
		return errorf(ErrBadRequest, "At most %d partitions can be altered in one request", store.MaxBatchOps)
	}
	ops := make([]store.Op, 0, len(puts)+len(dels))
	for _, o := range puts {
		b, err := json.Marshal(o)
		if err != nil {
			return fmt.Errorf("encode sink offset: %w", err)
		}
		ops = append(ops, store.Put(sinkOffsetKey(name, o.Topic, o.Partition), b))
	}
	for _, o := range dels {
		ops = append(ops, store.Delete(sinkOffsetKey(name, o.Topic, o.Partition)))
	}
	if _, _, err := h.store.Raw().Batch(ctx, nil, ops); err != nil {
		return fmt.Errorf("alter the offsets of connector %s: %w", name, err)
	}
	return nil
}

// sinkOffsetKey is connectstore's documented key of a sink offset
// (connect/sinkoffset/<name>/<topic>/<partition>, path-escaped), which
// connectstore offers no way to delete one at a time; a test checks that
// both agree.
func sinkOffsetKey(name, topic string, partition int32) string {
	return connectstore.Prefix + "sinkoffset/" + url.PathEscape(name) + "/" + url.PathEscape(topic) + "/" + strconv.Itoa(int(partition))
}
