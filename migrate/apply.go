package migrate

import (
	"context"
	"fmt"
	"time"

	"github.com/kcd-project/kcd/api"
)

// Importer is the part of kcd's API an import speaks (the REST client of
// kcd implements it).
type Importer interface {
	Import(ctx context.Context, req api.ImportRequest) (api.Import, error)
	ImportOffsets(ctx context.Context, id string, offsets api.ImportOffsets) (api.Import, error)
	CommitImport(ctx context.Context, id string) (api.Import, error)
	AbortImport(ctx context.Context, id string) (api.Import, error)
}

// Apply imports the connectors of c into kcd as p plans them: it opens an
// import, stages the offsets of the connectors it creates or overwrites,
// and commits it. Until the commit nothing is visible in kcd, and a
// failure drops what was staged; the commit makes every connector exist at
// once. progress, when not nil, is told of the offsets staged.
func Apply(ctx context.Context, imp Importer, c *Cluster, p *Plan, overwrite bool, progress func(Progress)) (api.Import, error) {
	im, err := imp.Import(ctx, p.ImportRequest(c, overwrite, false))
	if err != nil {
		return im, fmt.Errorf("open the import: %w", err)
	}
	p.SetActions(im.Items) // kcd refuses to open an import that would replace running connectors
	chunks := p.Offsets(c, api.MaxImportOffsets)
	total := int64(0)
	for _, ch := range chunks {
		total += int64(len(ch.Source) + len(ch.Sink))
	}
	sent := int64(0)
	for _, ch := range chunks {
		if _, err := imp.ImportOffsets(ctx, im.ID, ch); err != nil {
			abort(imp, im.ID)
			return im, fmt.Errorf("stage offsets of import %s (nothing was imported): %w", im.ID, err)
		}
		sent += int64(len(ch.Source) + len(ch.Sink))
		if progress != nil {
			progress(Progress{Topic: "import", Read: sent, Total: total})
		}
	}
	done, err := imp.CommitImport(ctx, im.ID)
	if err != nil {
		return im, fmt.Errorf("commit import %s (if the commit reached the leader, kcd completes it; see GET /kcd/v1/imports/%s): %w", im.ID, im.ID, err)
	}
	return done, nil
}

// abort drops an import that cannot go on, on a context of its own: the
// caller's may be what ended.
func abort(imp Importer, id string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _ = imp.AbortImport(ctx, id) // the leader drops stale staging itself when this fails
}
