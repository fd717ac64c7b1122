package serving

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"time"

	"go.uber.org/zap"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/engine"
	"github.com/trainyard/trainyard/internal/telemetry"
)

// adapters loads checkpoint adapters from the blob store through the LRU cache, each with the batching
// sampler its requests share. Entries are keyed by
// checkpoint id: ids are never reused, so a checkpoint deleted and re-created at the same step is a new
// entry, and since every request resolves its checkpoint from the database first, a deleted checkpoint is
// never served from the cache.
type adapters struct {
	blobs trainyard.BlobStore
	log   *zap.Logger
	cache *lruCache[string, loadedAdapter]
}

// loadedAdapter is a cache entry: the sampler of an adapter, and the adapter's size for the memory bound.
type loadedAdapter struct {
	sampler *engine.Sampler
	size    int64
}

func newAdapters(blobs trainyard.BlobStore, maxBytes int64, log *zap.Logger) *adapters {
	return &adapters{blobs: blobs, log: log, cache: newLRUCache[string, loadedAdapter](maxBytes,
		func(l loadedAdapter) int64 { return l.size })}
}

// get returns the sampler of checkpoint c of model modelName (for messages), loading the adapter on a miss.
func (a *adapters) get(ctx context.Context, base *engine.Base, modelName string, c *trainyard.Checkpoint) (*engine.Sampler, error) {
	l, hit, err := a.cache.get(ctx, c.ID, func(ctx context.Context) (loadedAdapter, error) {
		return a.load(ctx, base, modelName, c)
	})
	if hit {
		telemetry.AdapterCache.WithLabelValues("hit").Inc()
	} else {
		telemetry.AdapterCache.WithLabelValues("miss").Inc()
	}
	return l.sampler, err
}

func (a *adapters) load(ctx context.Context, base *engine.Base, modelName string, c *trainyard.Checkpoint) (loadedAdapter, error) {
	start := time.Now()
	cfg, err := a.read(ctx, c, trainyard.AdapterConfigFile)
	if err != nil {
		return loadedAdapter{}, a.missing(err, modelName, c)
	}
	weights, err := a.read(ctx, c, trainyard.AdapterWeightsFile)
	if err != nil {
		return loadedAdapter{}, a.missing(err, modelName, c)
	}
	ad, err := base.LoadAdapter(bytes.NewReader(weights), cfg)
	if err != nil {
		return loadedAdapter{}, fmt.Errorf("load adapter of checkpoint %s (model %s step %d): %w", c.ID, c.ModelID, c.Step, err)
	}
	sampler, err := base.NewSampler(ad)
	if err != nil {
		return loadedAdapter{}, fmt.Errorf("sampler for checkpoint %s: %w", c.ID, err)
	}
	a.log.Info("adapter loaded", zap.String("model_id", c.ModelID), zap.Int("step", c.Step),
		zap.Int64("bytes", ad.SizeBytes()), zap.Duration("took", time.Since(start)))
	return loadedAdapter{sampler: sampler, size: ad.SizeBytes()}, nil
}

func (a *adapters) read(ctx context.Context, c *trainyard.Checkpoint, name string) ([]byte, error) {
	rc, err := a.blobs.GetCheckpointFile(ctx, c.ModelID, c.Step, name)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return nil, fmt.Errorf("read %s of model %s step %d: %w", name, c.ModelID, c.Step, err)
	}
	return b, nil
}

// missing explains a checkpoint whose objects are gone: its row was read a moment ago, so it was deleted
// in between.
func (a *adapters) missing(err error, modelName string, c *trainyard.Checkpoint) error {
	if trainyard.ErrorCode(err) == trainyard.ENOTFOUND {
		return trainyard.WrapError(trainyard.ENOTFOUND, err,
			"The model `%s` does not exist: its checkpoint at step %d was deleted.", modelName, c.Step)
	}
	return fmt.Errorf("open checkpoint %s (model %s step %d): %w", c.ID, c.ModelID, c.Step, err)
}
