package javahost

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kcd-project/kcd/daemon/connect"
	"github.com/kcd-project/kcd/daemon/javahost/hostpb"
)

// Provider offers the host's plugins to daemon/connect's registry
// (connect.RegisterProvider).
type Provider struct {
	h *Host

	mu      sync.Mutex
	from    []*hostpb.Plugin // the catalogue the index was built from
	byName  map[string]*connect.Plugin
	list    []*connect.Plugin
	others  []connect.PluginDesc
	defs    map[string]connect.ConfigDef // ConfigDef by connector class
	lastErr time.Time                    // of the last failed catalogue wait logged
}

// NewProvider returns the provider of h's plugins.
func NewProvider(h *Host) *Provider {
	return &Provider{h: h, defs: map[string]connect.ConfigDef{}}
}

// catalogue returns the host's plugins, starting the host (and waiting
// for it within its start timeout) when none is known yet. A host that
// is down and waiting out its backoff answers at once with nothing.
func (p *Provider) catalogue() {
	if !p.h.Enabled() {
		return
	}
	ps := p.h.cachedPlugins()
	if ps == nil {
		ctx, cancel := context.WithTimeout(context.Background(), p.h.opts.StartTimeout)
		defer cancel()
		var err error
		if ps, err = p.h.Plugins(ctx); err != nil {
			p.mu.Lock()
			if time.Since(p.lastErr) > time.Minute {
				p.lastErr = time.Now()
				p.h.log.Warn("java host's plugins are not known", "err", err)
			}
			p.mu.Unlock()
			return
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(ps) == len(p.from) && (len(ps) == 0 || ps[0] == p.from[0]) && p.byName != nil {
		return
	}
	p.from = ps
	p.byName, p.list, p.others = map[string]*connect.Plugin{}, nil, nil
	for _, hp := range ps {
		switch hp.GetType() {
		case "source", "sink":
			cp := p.plugin(hp)
			p.list = append(p.list, cp)
			for _, n := range append(aliasesOf(hp.GetClassName()), hp.GetAliases()...) {
				if _, taken := p.byName[n]; !taken {
					p.byName[n] = cp
				}
			}
			p.byName[hp.GetClassName()] = cp
		default:
			p.others = append(p.others, connect.PluginDesc{Class: hp.GetClassName(), Type: hp.GetType(), Version: hp.GetVersion()})
		}
	}
	slices.SortFunc(p.list, func(a, b *connect.Plugin) int { return strings.Compare(a.Class, b.Class) })
}

// aliasesOf is Kafka Connect's simple-name aliases of a class.
func aliasesOf(class string) []string {
	simple := class[strings.LastIndexByte(class, '.')+1:]
	out := []string{simple}
	if s, ok := strings.CutSuffix(simple, "Connector"); ok && s != "" {
		out = append(out, s)
	}
	return out
}

func (p *Provider) plugin(hp *hostpb.Plugin) *connect.Plugin {
	typ := connect.PluginSource
	if hp.GetType() == "sink" {
		typ = connect.PluginSink
	}
	class, version := hp.GetClassName(), hp.GetVersion()
	return &connect.Plugin{
		Class: class, Type: typ, Version: version, Aliases: hp.GetAliases(),
		New: func() connect.Connector {
			c := &connector{p: p, class: class, version: version}
			if typ == connect.PluginSink {
				return &sinkConnector{c}
			}
			return &sourceConnector{c}
		},
	}
}

// Lookup implements connect.Provider.
func (p *Provider) Lookup(name string) (*connect.Plugin, bool) {
	p.catalogue()
	p.mu.Lock()
	defer p.mu.Unlock()
	cp, ok := p.byName[strings.TrimSpace(name)]
	return cp, ok
}

// Plugins implements connect.Provider.
func (p *Provider) Plugins() []*connect.Plugin {
	p.catalogue()
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.list)
}

// OtherPlugins implements connect.Provider.
func (p *Provider) OtherPlugins() []connect.PluginDesc {
	p.catalogue()
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.others)
}

// configDef returns a connector class's ConfigDef as the host's validate
// describes it, cached per class; empty when the host cannot say.
func (p *Provider) configDef(class string) connect.ConfigDef {
	p.mu.Lock()
	def, ok := p.defs[class]
	p.mu.Unlock()
	if ok {
		return def
	}
	ctx, cancel := context.WithTimeout(context.Background(), min(p.h.opts.HangLimit, time.Minute))
	defer cancel()
	resp, err := p.validate(ctx, class, map[string]string{"connector.class": class})
	if err != nil {
		p.h.log.Warn("java host: describe the connector's settings", "class", class, "err", err)
		return nil
	}
	def = configDefOf(resp.GetKeys())
	p.mu.Lock()
	p.defs[class] = def
	p.mu.Unlock()
	return def
}

// PluginConfig is the ConfigDef of one of the host's converters, header
// converters, transformations or predicates (connect.PluginConfigProvider).
func (p *Provider) PluginConfig(class string) (connect.ConfigDef, error) {
	ctx, cancel := context.WithTimeout(context.Background(), min(p.h.opts.HangLimit, time.Minute))
	defer cancel()
	c, err := p.h.Conn(ctx)
	if err != nil {
		return nil, err
	}
	resp, err := c.Call(ctx, &hostpb.Request{Call: &hostpb.Request_PluginConfig{PluginConfig: &hostpb.PluginConfigRequest{ClassName: class}}})
	if err != nil {
		return nil, err
	}
	return configDefOf(resp.GetPluginConfig().GetKeys()), nil
}

var _ connect.PluginConfigProvider = (*Provider)(nil)

// Restarted implements connect.RestartObserver: an operator's restart
// lifts the connector's quarantine (quarantine.go).
func (p *Provider) Restarted(connector string) { p.h.forgive(connector) }

var _ connect.RestartObserver = (*Provider)(nil)

func (p *Provider) validate(ctx context.Context, class string, cfg map[string]string) (*hostpb.ValidateResponse, error) {
	c, err := p.h.Conn(ctx)
	if err != nil {
		return nil, err
	}
	resp, err := c.Call(ctx, &hostpb.Request{Call: &hostpb.Request_Validate{Validate: &hostpb.ValidateRequest{
		ConnectorClass: class, Config: cfg}}})
	if err != nil {
		return nil, err
	}
	return resp.GetValidate(), nil
}

// configDefOf maps the host's keys onto kcd's ConfigDef.
func configDefOf(keys []*hostpb.ConfigKey) connect.ConfigDef {
	def := make(connect.ConfigDef, 0, len(keys))
	for _, k := range keys {
		ck := connect.ConfigKey{
			Name: k.GetName(), Type: connect.ConfigType(k.GetType()),
			Importance: connect.Importance(k.GetImportance()), Documentation: k.GetDocumentation(),
			Group: k.GetGroup(), Order: int(k.GetOrderInGroup()), Width: connect.Width(k.GetWidth()),
			DisplayName: k.GetDisplayName(), Dependents: k.GetDependents(),
		}
		if k.DefaultValue != nil {
			v := k.GetDefaultValue()
			ck.Default = &v
		} else if k.GetHasDefault() {
			ck.NullDefault = true // a default of null: optional
		}
		def = append(def, ck)
	}
	return def
}

// units routes the host's calls to the connectors and tasks they name.
type units struct {
	mu         sync.Mutex
	tasks      map[string]*taskBase
	connectors map[string]*connector
}

func (u *units) init() {
	u.tasks, u.connectors = map[string]*taskBase{}, map[string]*connector{}
}

func (u *units) addTask(t *taskBase) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.tasks[t.id] = t
}

func (u *units) removeTask(t *taskBase) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.tasks[t.id] == t {
		delete(u.tasks, t.id)
	}
}

func (u *units) addConnector(c *connector) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.connectors[c.name] = c
}

func (u *units) removeConnector(c *connector) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.connectors[c.name] == c {
		delete(u.connectors, c.name)
	}
}

// connDied fails the connectors that ran on conn; their tasks fail at
// their next call.
func (u *units) connDied(conn *Conn, err error) {
	u.mu.Lock()
	var cs []*connector
	for _, c := range u.connectors {
		if c.conn == conn {
			cs = append(cs, c)
		}
	}
	u.mu.Unlock()
	for _, c := range cs {
		c.cctx.RaiseError(err)
	}
}

// handle answers a call of the host.
func (u *units) handle(ctx context.Context, req *hostpb.Request) (*hostpb.Response, error) {
	switch call := req.Call.(type) {
	case *hostpb.Request_OffsetRead:
		r := call.OffsetRead
		var reader connect.OffsetReader
		u.mu.Lock()
		if r.GetTask() != "" {
			if t := u.tasks[r.GetTask()]; t != nil && t.offsets != nil {
				reader = t.offsets
			}
		} else if c := u.connectors[r.GetConnector()]; c != nil {
			if o, ok := c.cctx.(interface{ OffsetReader() connect.OffsetReader }); ok {
				reader = o.OffsetReader()
			}
		}
		u.mu.Unlock()
		out := make([][]byte, len(r.GetPartitions()))
		if reader == nil {
			return &hostpb.Response{Result: &hostpb.Response_OffsetRead{OffsetRead: &hostpb.OffsetReadResponse{Offsets: out}}}, nil
		}
		for i, pb := range r.GetPartitions() {
			part, err := decodeJSONMap(pb)
			if err != nil {
				return nil, fmt.Errorf("source partition: %w", err)
			}
			off, err := reader.Offset(ctx, part)
			if err != nil {
				return nil, fmt.Errorf("read offset: %w", err)
			}
			if out[i], err = encodeJSONMap(off); err != nil {
				return nil, err
			}
		}
		return &hostpb.Response{Result: &hostpb.Response_OffsetRead{OffsetRead: &hostpb.OffsetReadResponse{Offsets: out}}}, nil

	case *hostpb.Request_ConnectorEvent:
		ev := call.ConnectorEvent
		u.mu.Lock()
		c := u.connectors[ev.GetConnector()]
		u.mu.Unlock()
		if c == nil {
			return nil, fmt.Errorf("no connector %q runs", ev.GetConnector())
		}
		switch e := ev.Event.(type) {
		case *hostpb.ConnectorEvent_RequestTaskReconfiguration:
			c.cctx.RequestTaskReconfiguration()
		case *hostpb.ConnectorEvent_RaiseError:
			c.cctx.RaiseError(javaError(e.RaiseError))
		}
		return nil, nil

	case *hostpb.Request_ErrantRecord:
		r := call.ErrantRecord
		u.mu.Lock()
		t := u.tasks[r.GetTask()]
		u.mu.Unlock()
		if t == nil || t.errant == nil {
			return nil, fmt.Errorf("task %q reports no errant records", r.GetTask())
		}
		var cause error = errors.New("errant record")
		if r.GetError() != nil {
			cause = javaError(r.GetError())
		}
		return nil, t.errant(ctx, sinkRecordOf(r.GetRecord()), cause)
	}
	return nil, fmt.Errorf("kcd does not answer %T", req.Call)
}
