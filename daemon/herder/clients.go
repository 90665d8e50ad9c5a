package herder

import (
	"maps"
	"slices"

	"github.com/kcd-project/kcd/daemon/clientcfg"
	"github.com/kcd-project/kcd/daemon/connect"
)

// ClientSettings are the workers' producer and consumer settings, against
// which validate checks a connector's producer.override.* and
// consumer.override.* settings.
type ClientSettings struct {
	// Policy is connector.client.config.override.policy ("": All).
	Policy clientcfg.Policy
	// Producer and Consumer are the workers' producer.* and consumer.*
	// settings, without the prefix.
	Producer, Consumer map[string]string
	// NotTransactional says source tasks share a non-transactional
	// producer (exactly-once source support disabled).
	NotTransactional bool
}

// checkClientOverrides is AbstractHerder.validateClientOverrides with
// kcd's own check after the policy's: each override of the connector's
// client (producer for a source, consumer for a sink) is listed under its
// prefixed name, with the policy's refusal or kcd's as its error.
func (h *Herder) checkClientOverrides(typ connect.PluginType, props Config, r *results) {
	cs := h.opts.Clients
	if cs == nil {
		cs = &ClientSettings{}
	}
	policy, err := clientcfg.ParsePolicy(string(cs.Policy))
	if err != nil {
		policy = clientcfg.PolicyAll
	}
	prefix := clientcfg.ProducerOverridePrefix
	if typ == connect.PluginSink {
		prefix = clientcfg.ConsumerOverridePrefix
	}
	overrides := clientcfg.WithPrefix(props.Strings(), prefix)
	refused := false
	for _, name := range slices.Sorted(maps.Keys(overrides)) {
		full := prefix + name
		v := r.byName[full]
		if v == nil {
			v = &ConfigValueInfo{Name: full, Value: props[full], RecommendedValues: []string{}, Errors: []string{}, Visible: true}
			r.configs = append(r.configs, ConfigInfo{Value: v})
			r.byName[full] = v
		}
		var msg string
		switch {
		case !policy.Allows(name):
			msg = policy.Refusal(name)
		case prefix == clientcfg.ProducerOverridePrefix:
			if err := clientcfg.CheckProducer(prefix, name, overrides[name]); err != nil {
				msg = err.Error()
			}
		default:
			if err := clientcfg.CheckConsumer(prefix, name, overrides[name]); err != nil {
				msg = err.Error()
			}
		}
		if msg != "" {
			refused = true
			v.Errors = append(v.Errors, msg)
		}
	}
	if refused || typ == connect.PluginSink || len(overrides) == 0 {
		return
	}
	// Settings that are each valid may not go together: the worker's
	// settings, then the connector's.
	p, err := clientcfg.DefaultProducer().With(cs.Producer, clientcfg.ProducerPrefix)
	if err == nil {
		p, err = p.With(overrides, prefix)
	}
	if err == nil {
		err = p.Check(prefix, !cs.NotTransactional)
	}
	if err != nil {
		name := slices.Sorted(maps.Keys(overrides))[0]
		if _, ok := overrides["acks"]; ok {
			name = "acks"
		}
		r.addError(prefix+name, err.Error())
	}
}
