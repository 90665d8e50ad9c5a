package restapi

import (
	"context"
	"net/http"
	"strconv"

	kcdapi "github.com/kcd-project/kcd/api"
)

// Importer runs imports (kcctl migrate) on the Raft leader
// (daemon/importer). Its errors are *Error values with the status to
// answer.
type Importer interface {
	Import(ctx context.Context, req kcdapi.ImportRequest) (kcdapi.Import, error)
	ImportOffsets(ctx context.Context, id string, offs kcdapi.ImportOffsets) (kcdapi.Import, error)
	Commit(ctx context.Context, id string) (kcdapi.Import, error)
	Abort(ctx context.Context, id string) (kcdapi.Import, error)
	Get(ctx context.Context, id string) (kcdapi.Import, error)
	List(ctx context.Context) ([]kcdapi.Import, error)
}

// Export page sizes (GET /kcd/v1/export?limit=).
const (
	defaultExportLimit = 100
	maxExportLimit     = 1000
)

func (a *api) importRoutes() []route {
	lead := func(fn func(*http.Request) (int, any, *Error)) func(*http.Request) (int, any, *Error) {
		return a.withCluster(a.leaderOnly(a.withImporter(fn)))
	}
	return []route{
		{"POST", "/kcd/v1/imports", lead(a.createImport)},
		{"GET", "/kcd/v1/imports", lead(a.listImports)},
		{"GET", "/kcd/v1/imports/{id}", lead(a.getImport)},
		{"DELETE", "/kcd/v1/imports/{id}", lead(a.abortImport)},
		{"POST", "/kcd/v1/imports/{id}/offsets", lead(a.importOffsets)},
		{"POST", "/kcd/v1/imports/{id}/commit", lead(a.commitImport)},
		{"GET", "/kcd/v1/export", a.withConnect(a.export)},
	}
}

func (a *api) withImporter(fn func(*http.Request) (int, any, *Error)) func(*http.Request) (int, any, *Error) {
	return func(r *http.Request) (int, any, *Error) {
		if a.importer == nil {
			return 0, nil, Errorf(http.StatusServiceUnavailable, "this node does not run imports; ask a Raft node")
		}
		return fn(r)
	}
}

func (a *api) createImport(r *http.Request) (int, any, *Error) {
	var req kcdapi.ImportRequest
	if e := decodeBody(r, &req); e != nil {
		return 0, nil, e
	}
	im, err := a.importer.Import(r.Context(), req)
	if err != nil {
		return 0, nil, asError(err)
	}
	if req.DryRun {
		return http.StatusOK, im, nil
	}
	return http.StatusCreated, im, nil
}

func (a *api) listImports(r *http.Request) (int, any, *Error) {
	ims, err := a.importer.List(r.Context())
	if err != nil {
		return 0, nil, asError(err)
	}
	return http.StatusOK, ims, nil
}

func (a *api) getImport(r *http.Request) (int, any, *Error) {
	im, err := a.importer.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		return 0, nil, asError(err)
	}
	return http.StatusOK, im, nil
}

func (a *api) abortImport(r *http.Request) (int, any, *Error) {
	im, err := a.importer.Abort(r.Context(), r.PathValue("id"))
	if err != nil {
		return 0, nil, asError(err)
	}
	return http.StatusOK, im, nil
}

func (a *api) importOffsets(r *http.Request) (int, any, *Error) {
	var offs kcdapi.ImportOffsets
	if e := decodeBodyNumbers(r, &offs); e != nil { // offsets keep their numbers exact
		return 0, nil, e
	}
	im, err := a.importer.ImportOffsets(r.Context(), r.PathValue("id"), offs)
	if err != nil {
		return 0, nil, asError(err)
	}
	return http.StatusOK, im, nil
}

func (a *api) commitImport(r *http.Request) (int, any, *Error) {
	im, err := a.importer.Commit(r.Context(), r.PathValue("id"))
	if err != nil {
		return 0, nil, asError(err)
	}
	return http.StatusOK, im, nil
}

// export is GET /kcd/v1/export?after=NAME&limit=N, served from the store
// by any node.
func (a *api) export(r *http.Request) (int, any, *Error) {
	q := r.URL.Query()
	limit := defaultExportLimit
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxExportLimit {
			return 0, nil, Errorf(http.StatusBadRequest, "limit must be a number from 1 to %d, not %q", maxExportLimit, s)
		}
		limit = n
	}
	conns, next, rev, err := a.connect.Store().Export(r.Context(), q.Get("after"), limit)
	if err != nil {
		return 0, nil, asError(err)
	}
	out := kcdapi.Export{Revision: rev, Next: next, Connectors: make([]kcdapi.ExportConnector, len(conns))}
	for i, c := range conns {
		ec := kcdapi.ExportConnector{Name: c.Name, Config: c.Config, Target: c.Target, Tasks: c.Tasks}
		for _, o := range c.Source {
			ec.SourceOffsets = append(ec.SourceOffsets, kcdapi.ImportSourceOffset{Connector: c.Name, Partition: o.Partition, Offset: o.Offset, Key: o.Key})
		}
		for _, o := range c.Sink {
			ec.SinkOffsets = append(ec.SinkOffsets, kcdapi.ImportSinkOffset{Connector: c.Name, Topic: o.Topic, Partition: o.Partition, Offset: o.Offset})
		}
		out.Connectors[i] = ec
	}
	return http.StatusOK, out, nil
}
