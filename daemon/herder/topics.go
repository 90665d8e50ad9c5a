package herder

import (
	"context"
	"fmt"
)

// Topics returns the topics a connector's tasks used since the last reset,
// sorted. A connector that does not exist has none, as in Kafka Connect.
func (h *Herder) Topics(ctx context.Context, name string) (ActiveTopics, error) {
	if h.opts.NoTopicTracking {
		return nil, errorf(ErrForbidden, "Topic tracking is disabled.")
	}
	sts, err := h.store.Topics(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("read the topics of connector %s: %w", name, err)
	}
	topics := make([]string, len(sts))
	for i, st := range sts {
		topics[i] = st.Topic
	}
	return ActiveTopics{name: {Topics: topics}}, nil
}

// ResetTopics forgets the topics a connector's tasks used; running tasks
// record a topic again when they next use it. A connector that does not
// exist is no error, as in Kafka Connect.
func (h *Herder) ResetTopics(ctx context.Context, name string) error {
	if h.opts.NoTopicTracking {
		return errorf(ErrForbidden, "Topic tracking is disabled.")
	}
	if h.opts.NoTopicTrackingReset {
		return errorf(ErrForbidden, "Topic tracking reset is disabled.")
	}
	if err := h.store.ResetTopics(ctx, name); err != nil {
		return fmt.Errorf("reset the topics of connector %s: %w", name, err)
	}
	h.log.Info("connector topics reset", "connector", name)
	return nil
}
