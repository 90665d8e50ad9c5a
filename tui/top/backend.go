package top

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/kcd-project/kcd/daemon/client"
)

// ClientBackend is the Backend over the REST API: each action goes to the
// server Client returns (the one the feed last heard from).
type ClientBackend struct {
	Client func() *client.Client
}

// Backend returns a ClientBackend that talks to the server the feed's
// polls use.
func (f *Feed) Backend() ClientBackend {
	return ClientBackend{Client: func() *client.Client { return f.cfg.Client(f.currentServer()) }}
}

var _ Backend = ClientBackend{}

// RestartConnector is POST /connectors/{name}/restart, with all its tasks
// when tasks is set.
func (b ClientBackend) RestartConnector(ctx context.Context, name string, tasks bool) error {
	if _, err := b.Client().RestartConnector(ctx, name, tasks, false); err != nil {
		return fmt.Errorf("restart connector %s: %w", name, err)
	}
	return nil
}

// RestartTask is POST /connectors/{name}/tasks/{task}/restart.
func (b ClientBackend) RestartTask(ctx context.Context, name string, task int) error {
	if err := b.Client().RestartTask(ctx, name, task); err != nil {
		return fmt.Errorf("restart task %s/%d: %w", name, task, err)
	}
	return nil
}

// PauseConnector is PUT /connectors/{name}/pause.
func (b ClientBackend) PauseConnector(ctx context.Context, name string) error {
	if err := b.Client().PauseConnector(ctx, name); err != nil {
		return fmt.Errorf("pause connector %s: %w", name, err)
	}
	return nil
}

// ResumeConnector is PUT /connectors/{name}/resume.
func (b ClientBackend) ResumeConnector(ctx context.Context, name string) error {
	if err := b.Client().ResumeConnector(ctx, name); err != nil {
		return fmt.Errorf("resume connector %s: %w", name, err)
	}
	return nil
}

// Offsets is GET /connectors/{name}/offsets, each partition and offset as
// compact JSON.
func (b ClientBackend) Offsets(ctx context.Context, name string) ([]Offset, error) {
	offs, err := b.Client().ConnectorOffsets(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("offsets of %s: %w", name, err)
	}
	out := make([]Offset, 0, len(offs.Offsets))
	for _, o := range offs.Offsets {
		p, _ := json.Marshal(o.Partition)
		v, _ := json.Marshal(o.Offset)
		out = append(out, Offset{Partition: string(p), Offset: string(v)})
	}
	return out, nil
}
