// Builds the console into platform/console/dist, which the Go package
// embeds. The build must be reproducible: CI rebuilds it and fails when the
// committed files differ, so no source maps (they carry paths) and no
// time stamps.
import { defineConfig } from 'vite';

export default defineConfig({
  base: '/ui/',
  build: {
    outDir: '../platform/console/dist',
    emptyOutDir: true,
    sourcemap: false,
    target: 'es2022',
    assetsInlineLimit: 0,
    chunkSizeWarningLimit: 200,
  },
  oxc: {
    jsx: { runtime: 'automatic', importSource: 'preact' },
  },
  server: {
    // `npm run dev` serves the console with hot reload and sends API calls
    // to a running Seam (SEAM_HTTP, default the `seam up` address).
    proxy: { '/v1': process.env.SEAM_HTTP ?? 'http://127.0.0.1:8080' },
  },
});
