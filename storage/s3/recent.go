package s3

import (
	"strings"
	"sync"
)

// Reading back what this process just stored is common: serving's first chat on a new checkpoint loads the
// adapter a job of the same process wrote a second before (ART's loop, every iteration), and that read was
// 0.06–0.34 s of the first chat against the embedded store. The store keeps the bytes of the checkpoint
// files it stored last, with the ETag the server gave them, and a read asks the server only whether the
// object changed (If-None-Match): 304, no body, and the bytes come from memory; anything else (a newer
// object, from any process; none at all) is answered as without the copy. So the copy is never stale.
const (
	recentMaxBytes = 96 << 20 // every kept file together
	recentMaxFile  = 48 << 20 // the largest file kept (a 0.5B model's rank-8 adapter is about 35 MB)
)

// recentFiles is that copy: files by key, the oldest dropped first past recentMaxBytes.
type recentFiles struct {
	mu    sync.Mutex
	bytes int
	order []string
	files map[string]recentFile
}

type recentFile struct {
	etag string
	data []byte
}

// put keeps data as key's bytes with the ETag the server gave them.
func (c *recentFiles) put(key, etag string, data []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropLocked(key)
	if etag == "" || len(data) > recentMaxFile {
		return
	}
	if c.files == nil {
		c.files = map[string]recentFile{}
	}
	c.files[key] = recentFile{etag: etag, data: data}
	c.order = append(c.order, key)
	c.bytes += len(data)
	for c.bytes > recentMaxBytes {
		c.dropLocked(c.order[0])
	}
}

// get returns key's kept bytes and their ETag.
func (c *recentFiles) get(key string) (recentFile, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f, ok := c.files[key]
	return f, ok
}

// drop forgets key, and dropPrefix every key under prefix.
func (c *recentFiles) drop(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropLocked(key)
}

func (c *recentFiles) dropPrefix(prefix string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range append([]string(nil), c.order...) {
		if strings.HasPrefix(k, prefix) {
			c.dropLocked(k)
		}
	}
}

func (c *recentFiles) dropLocked(key string) {
	f, ok := c.files[key]
	if !ok {
		return
	}
	delete(c.files, key)
	c.bytes -= len(f.data)
	for i, k := range c.order {
		if k == key {
			c.order = append(c.order[:i], c.order[i+1:]...)
			break
		}
	}
}
