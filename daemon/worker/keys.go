package worker

import (
	"net/url"
	"strings"

	"github.com/kcd-project/kcd/daemon/connectstore"
)

// The parts of connectstore's key layout (documented in its package
// comment) that the worker needs and connectstore does not export: which
// connector a watched key belongs to, the revision of a task config set,
// and the connector status key for the clean-up after a deletion.

// keyKind is what a key under connectstore.Prefix holds.
type keyKind int

const (
	keyOther keyKind = iota
	keyConfig
	keyTarget
	keyTasks
	keyRestart
)

// parseKey returns the kind and connector name of a key. Statuses and
// offsets are keyOther: the worker writes them and needs no event.
func parseKey(key string) (keyKind, string) {
	rest, ok := strings.CutPrefix(key, connectstore.Prefix)
	if !ok {
		return keyOther, ""
	}
	dir, esc, ok := strings.Cut(rest, "/")
	if !ok || strings.Contains(esc, "/") {
		return keyOther, ""
	}
	name, err := url.PathUnescape(esc)
	if err != nil {
		return keyOther, ""
	}
	switch dir {
	case "config":
		return keyConfig, name
	case "target":
		return keyTarget, name
	case "tasks":
		return keyTasks, name
	case "restart":
		return keyRestart, name
	}
	return keyOther, ""
}

func tasksKey(name string) string {
	return connectstore.Prefix + "tasks/" + url.PathEscape(name)
}

func connectorStatusKey(name string) string {
	return connectstore.Prefix + "status/" + url.PathEscape(name) + "/connector"
}
