package restapi

import (
	"errors"
	"io"
	"net/http"
	"strconv"

	kcdapi "github.com/kcd-project/kcd/api"
	"github.com/kcd-project/kcd/store"
)

// The bodies of /kcd/v1/store/keys (see package api).
type (
	KeyValue   = kcdapi.KeyValue
	KeyList    = kcdapi.KeyList
	StoreWrite = kcdapi.StoreWrite
)

func (a *api) needStore() *Error {
	if a.store == nil {
		return Errorf(http.StatusServiceUnavailable, "this node holds no metadata store (it is worker-only): ask a node with the raft role")
	}
	return nil
}

func storeError(err error) *Error {
	switch {
	case errors.Is(err, store.ErrInvalid):
		return Errorf(http.StatusBadRequest, "%v", err)
	case errors.Is(err, store.ErrClosed):
		return Errorf(http.StatusServiceUnavailable, "%v", err)
	}
	return asError(err)
}

func kvOf(kv store.KV) KeyValue {
	return KeyValue{Key: kv.Key, Value: string(kv.Value), CreateRevision: kv.CreateRevision, ModRevision: kv.ModRevision}
}

func (a *api) listKeys(r *http.Request) (int, any, *Error) {
	if e := a.needStore(); e != nil {
		return 0, nil, e
	}
	limit := 0
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return 0, nil, Errorf(http.StatusBadRequest, "limit %q is not a non-negative integer", v)
		}
		limit = n
	}
	kvs, rev, err := a.store.Scan(r.Context(), r.URL.Query().Get("prefix"), limit)
	if err != nil {
		return 0, nil, storeError(err)
	}
	out := KeyList{Revision: rev, Keys: make([]KeyValue, 0, len(kvs))}
	for _, kv := range kvs {
		out.Keys = append(out.Keys, kvOf(kv))
	}
	return http.StatusOK, out, nil
}

func (a *api) getKey(r *http.Request) (int, any, *Error) {
	if e := a.needStore(); e != nil {
		return 0, nil, e
	}
	kv, found, err := a.store.Get(r.Context(), r.PathValue("key"))
	if err != nil {
		return 0, nil, storeError(err)
	}
	if !found {
		return 0, nil, Errorf(http.StatusNotFound, "key %q not found", r.PathValue("key"))
	}
	return http.StatusOK, kvOf(kv), nil
}

func (a *api) putKey(r *http.Request) (int, any, *Error) {
	if e := a.needStore(); e != nil {
		return 0, nil, e
	}
	value, err := io.ReadAll(io.LimitReader(r.Body, store.MaxValueSize+1))
	if err != nil {
		return 0, nil, Errorf(http.StatusBadRequest, "read value: %v", err)
	}
	if len(value) > store.MaxValueSize {
		return 0, nil, Errorf(http.StatusRequestEntityTooLarge, "value is larger than %d bytes", store.MaxValueSize)
	}
	rev, err := a.store.Put(r.Context(), r.PathValue("key"), value)
	if err != nil {
		return 0, nil, storeError(err)
	}
	return http.StatusOK, StoreWrite{Revision: rev}, nil
}

func (a *api) deleteKey(r *http.Request) (int, any, *Error) {
	if e := a.needStore(); e != nil {
		return 0, nil, e
	}
	rev, deleted, err := a.store.Delete(r.Context(), r.PathValue("key"))
	if err != nil {
		return 0, nil, storeError(err)
	}
	return http.StatusOK, StoreWrite{Revision: rev, Deleted: &deleted}, nil
}
