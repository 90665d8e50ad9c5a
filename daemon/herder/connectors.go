package herder

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/kcd-project/kcd/api"
	"github.com/kcd-project/kcd/daemon/connectstore"
)

// Connectors lists the connector names, sorted.
func (h *Herder) Connectors(ctx context.Context) ([]string, error) {
	names, err := h.store.Connectors(ctx)
	if err != nil {
		return nil, fmt.Errorf("list connectors: %w", err)
	}
	return names, nil
}

// config reads a connector's config; notFound is the message when there is
// no such connector (Kafka Connect words it differently per call).
func (h *Herder) config(ctx context.Context, name, notFound string) (map[string]string, int64, error) {
	cfg, rev, err := h.store.Config(ctx, name)
	if errors.Is(err, connectstore.ErrNotFound) {
		return nil, 0, errorf(ErrNotFound, notFound, name)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("read the config of connector %s: %w", name, err)
	}
	return cfg, rev, nil
}

const (
	msgNotFound       = "Connector %s not found"
	msgUnknown        = "Unknown connector %s"
	msgUnknownRestart = "Unknown connector: %s"
)

// connectorConfig is config with the settings given as null.
func (h *Herder) connectorConfig(ctx context.Context, name string) (connectstore.ConnectorConfig, int64, error) {
	cc, rev, err := h.store.ConnectorConfig(ctx, name)
	if errors.Is(err, connectstore.ErrNotFound) {
		return cc, 0, errorf(ErrNotFound, msgNotFound, name)
	}
	if err != nil {
		return cc, 0, fmt.Errorf("read the config of connector %s: %w", name, err)
	}
	return cc, rev, nil
}

// ConnectorInfo returns a connector's config, task ids and type.
func (h *Herder) ConnectorInfo(ctx context.Context, name string) (ConnectorInfo, error) {
	cc, _, err := h.connectorConfig(ctx, name)
	if err != nil {
		return ConnectorInfo{}, err
	}
	return h.info(ctx, name, cc.Config, cc.Nulls)
}

func (h *Herder) info(ctx context.Context, name string, cfg map[string]string, nulls []string) (ConnectorInfo, error) {
	tasks, err := h.store.Tasks(ctx, name)
	if err != nil {
		return ConnectorInfo{}, fmt.Errorf("read the tasks of connector %s: %w", name, err)
	}
	ids := make([]TaskID, len(tasks.Tasks))
	for i := range ids {
		ids[i] = TaskID{Connector: name, Task: i}
	}
	return ConnectorInfo{Name: name, Config: cfg, Tasks: ids, Type: connectorTypeOf(cfg[keyConnectorClass]), Nulls: nulls}, nil
}

// Config returns a connector's config; settings given as null are null.
func (h *Herder) Config(ctx context.Context, name string) (map[string]*string, error) {
	cc, _, err := h.connectorConfig(ctx, name)
	if err != nil {
		return nil, err
	}
	return api.ConfigWithNulls(cc.Config, cc.Nulls), nil
}

// Target states a connector can be created in (POST /connectors's
// initial_state, case-insensitive).
func ParseInitialState(s string) (string, bool) {
	switch strings.ToUpper(s) {
	case "RUNNING":
		return connectstore.TargetStarted, true
	case "PAUSED":
		return connectstore.TargetPaused, true
	case "STOPPED":
		return connectstore.TargetStopped, true
	}
	return "", false
}

// CreateConnector validates and stores a new connector in target state
// target (connectstore.TargetStarted, TargetPaused or TargetStopped).
// props must hold the name.
func (h *Herder) CreateConnector(ctx context.Context, name string, props Config, target string) (ConnectorInfo, error) {
	p, cfg, nulls, err := h.checkWrite(props)
	if err != nil {
		return ConnectorInfo{}, err
	}
	created, err := h.store.CreateConnector(ctx, name, cfg, target, nulls...)
	if err != nil {
		return ConnectorInfo{}, fmt.Errorf("create connector %s: %w", name, err)
	}
	if !created {
		return ConnectorInfo{}, errorf(ErrAlreadyExists, "Connector %s already exists", name)
	}
	h.log.Info("connector created", "connector", name, "class", p.Class, "target", target)
	return ConnectorInfo{Name: name, Config: cfg, Tasks: []TaskID{}, Type: ConnectorType(p.Type), Nulls: nulls}, nil
}

// PutConfig validates props and stores them as the config of connector
// name, creating it (created true) when it does not exist.
func (h *Herder) PutConfig(ctx context.Context, name string, props Config) (info ConnectorInfo, created bool, err error) {
	p, cfg, nulls, err := h.checkWrite(props)
	if err != nil {
		return ConnectorInfo{}, false, err
	}
	for range maxAttempts {
		_, rev, err := h.store.Config(ctx, name)
		if errors.Is(err, connectstore.ErrNotFound) {
			ok, err := h.store.CreateConnector(ctx, name, cfg, connectstore.TargetStarted, nulls...)
			if err != nil {
				return ConnectorInfo{}, false, fmt.Errorf("create connector %s: %w", name, err)
			}
			if ok {
				h.log.Info("connector created", "connector", name, "class", p.Class)
				return ConnectorInfo{Name: name, Config: cfg, Tasks: []TaskID{}, Type: ConnectorType(p.Type), Nulls: nulls}, true, nil
			}
			continue // created meanwhile: update it
		}
		if err != nil {
			return ConnectorInfo{}, false, fmt.Errorf("read the config of connector %s: %w", name, err)
		}
		if ok, err := h.store.UpdateConfig(ctx, name, cfg, rev, nulls...); err != nil {
			return ConnectorInfo{}, false, fmt.Errorf("update connector %s: %w", name, err)
		} else if ok {
			h.log.Info("connector config updated", "connector", name)
			info, err := h.info(ctx, name, cfg, nulls)
			return info, false, err
		}
	}
	return ConnectorInfo{}, false, conflict(name)
}

// PatchConfig applies patch to an existing connector's config (a nil value
// removes the setting), validates the result and stores it.
func (h *Herder) PatchConfig(ctx context.Context, name string, patch Config) (ConnectorInfo, error) {
	for range maxAttempts {
		old, rev, err := h.connectorConfig(ctx, name)
		if err != nil {
			return ConnectorInfo{}, err
		}
		merged := ConfigOf(old.Config)
		for _, k := range old.Nulls {
			if _, ok := merged[k]; !ok {
				merged[k] = nil
			}
		}
		for k, v := range patch {
			if v == nil {
				delete(merged, k)
			} else {
				merged[k] = v
			}
		}
		_, cfg, nulls, err := h.checkWrite(merged)
		if err != nil {
			return ConnectorInfo{}, err
		}
		ok, err := h.store.UpdateConfig(ctx, name, cfg, rev, nulls...)
		if err != nil {
			return ConnectorInfo{}, fmt.Errorf("update connector %s: %w", name, err)
		}
		if ok {
			h.log.Info("connector config patched", "connector", name)
			return h.info(ctx, name, cfg, nulls)
		}
	}
	return ConnectorInfo{}, conflict(name)
}

// DeleteConnector removes a connector, its tasks and statuses; its offsets
// stay, as in Kafka Connect.
func (h *Herder) DeleteConnector(ctx context.Context, name string) error {
	deleted, err := h.store.DeleteConnector(ctx, name)
	if err != nil {
		return fmt.Errorf("delete connector %s: %w", name, err)
	}
	if !deleted {
		return errorf(ErrNotFound, msgNotFound, name)
	}
	h.log.Info("connector deleted", "connector", name)
	return nil
}

// Pause asks the workers to pause a connector and its tasks.
func (h *Herder) Pause(ctx context.Context, name string) error {
	return h.setTarget(ctx, name, connectstore.TargetPaused)
}

// Resume asks the workers to run a paused or stopped connector.
func (h *Herder) Resume(ctx context.Context, name string) error {
	return h.setTarget(ctx, name, connectstore.TargetStarted)
}

// Stop asks the workers to stop a connector and drops its task configs, as
// Kafka Connect does, so that its offsets can then be changed. The target
// state is written first: a worker that sees the empty task set already
// knows not to make new ones.
func (h *Herder) Stop(ctx context.Context, name string) error {
	if err := h.setTarget(ctx, name, connectstore.TargetStopped); err != nil {
		return err
	}
	tasks, err := h.store.Tasks(ctx, name)
	if err != nil {
		return fmt.Errorf("read the tasks of connector %s: %w", name, err)
	}
	if len(tasks.Tasks) == 0 {
		return nil
	}
	if _, err := h.store.SetTasks(ctx, name, []map[string]string{}, nil); err != nil && !errors.Is(err, connectstore.ErrNotFound) {
		return fmt.Errorf("clear the tasks of connector %s: %w", name, err)
	}
	return nil
}

func (h *Herder) setTarget(ctx context.Context, name, state string) error {
	err := h.store.SetTarget(ctx, name, state)
	if errors.Is(err, connectstore.ErrNotFound) {
		return errorf(ErrNotFound, msgUnknown, name)
	}
	if err != nil {
		return fmt.Errorf("set the target state of connector %s to %s: %w", name, state, err)
	}
	h.log.Info("connector target state set", "connector", name, "target", state)
	return nil
}
