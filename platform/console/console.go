// Package console serves the Seam console, a web UI built from the REST API
// only, from assets embedded in the binary: `seam up` and every service
// process that serves REST show it at /ui/ without Node.js or any file on
// disk. The assets are built from web/ (`make console`) into dist/ and
// committed; CI rebuilds them and fails when they differ.
package console

import (
	"bytes"
	"compress/gzip"
	"embed"
	"fmt"
	"hash/fnv"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"sync"
)

// Prefix is where the console is mounted.
const Prefix = "/ui/"

//go:embed all:dist
var dist embed.FS

// contentSecurityPolicy allows nothing but this origin: the console loads
// no third-party script, style, font or image and talks only to the REST
// API it was served from.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// asset is one embedded file, read once, with its gzip form when that is
// smaller.
type asset struct {
	body  []byte
	gz    []byte
	ctype string
	etag  string
}

// Handler serves the console. Paths under Prefix name embedded files;
// hashed files under assets/ are cached for good, and every other path is
// a page of the single-page app and gets index.html, so deep links and
// reloads work.
func Handler() http.Handler {
	files, err := fs.Sub(dist, "dist")
	if err != nil {
		// dist is embedded at build time; Sub fails only on a malformed name.
		panic(fmt.Sprintf("console: embedded assets: %v", err))
	}
	return &handler{files: files, cache: map[string]*asset{}}
}

type handler struct {
	files fs.FS
	mu    sync.Mutex
	cache map[string]*asset
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "the console is read with GET", http.StatusMethodNotAllowed)
		return
	}
	name := strings.TrimPrefix(path.Clean(r.URL.Path), strings.TrimSuffix(Prefix, "/"))
	name = strings.TrimPrefix(name, "/")
	hdr := w.Header()
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Referrer-Policy", "no-referrer")

	a, err := h.load(name)
	switch {
	case err == nil && name != "" && name != "index.html":
		if strings.HasPrefix(name, "assets/") {
			hdr.Set("Cache-Control", "public, max-age=31536000, immutable")
		} else {
			hdr.Set("Cache-Control", "no-cache")
		}
	case strings.HasPrefix(name, "assets/"):
		// A missing script or style must not be answered with the page.
		http.Error(w, "no such console asset: "+name, http.StatusNotFound)
		return
	default:
		if a, err = h.load("index.html"); err != nil {
			http.Error(w, "the console was built without index.html: run `make console`", http.StatusInternalServerError)
			return
		}
		hdr.Set("Cache-Control", "no-cache")
		hdr.Set("Content-Security-Policy", contentSecurityPolicy)
	}
	hdr.Set("Content-Type", a.ctype)
	hdr.Set("ETag", a.etag)
	hdr.Add("Vary", "Accept-Encoding")
	if match := r.Header.Get("If-None-Match"); match != "" && match == a.etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body := a.body
	if a.gz != nil && acceptsGzip(r) {
		hdr.Set("Content-Encoding", "gzip")
		body = a.gz
	}
	hdr.Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(body)
}

// load reads an embedded file once and keeps it with its compressed form.
func (h *handler) load(name string) (*asset, error) {
	if name == "" {
		return nil, fs.ErrNotExist
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if a, ok := h.cache[name]; ok {
		return a, nil
	}
	body, err := fs.ReadFile(h.files, name)
	if err != nil {
		return nil, err
	}
	ctype := mime.TypeByExtension(path.Ext(name))
	if ctype == "" {
		ctype = http.DetectContentType(body)
	}
	a := &asset{body: body, ctype: ctype, etag: etag(body)}
	if compressible(ctype) {
		var buf bytes.Buffer
		zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		if err != nil {
			return nil, err
		}
		if _, err := zw.Write(body); err != nil {
			return nil, err
		}
		if err := zw.Close(); err != nil {
			return nil, err
		}
		if buf.Len() < len(body) {
			a.gz = buf.Bytes()
		}
	}
	h.cache[name] = a
	return a, nil
}

func compressible(ctype string) bool {
	return strings.HasPrefix(ctype, "text/") || strings.Contains(ctype, "javascript") ||
		strings.Contains(ctype, "json") || strings.Contains(ctype, "svg")
}

func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		enc, q, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(enc), "gzip") && strings.ReplaceAll(strings.TrimSpace(q), " ", "") != "q=0" {
			return true
		}
	}
	return false
}

// etag names an embedded file's content; FNV is enough for a file that
// never changes while the process runs.
func etag(b []byte) string {
	h := fnv.New64a()
	_, _ = h.Write(b)
	return fmt.Sprintf(`"%x"`, h.Sum64())
}
