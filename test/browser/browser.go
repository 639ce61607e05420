// Package browser drives Debian's chromium, headless, over the Chrome DevTools protocol, for
// the tests that read a real web page as a user sees it (the Temporal UI). It reaches
// 127.0.0.0/8 only: every host name but the loopback address resolves to nothing, and
// chromium's own background traffic is switched off.
package browser

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"time"

	"github.com/chromedp/chromedp"
)

// Executable is the chromium that hack/install-chromium.sh installs.
const Executable = "chromium"

// reloadEvery is how often Find reloads a page that does not show the text yet: a single-page
// application fetches its data once per load.
const reloadEvery = 20 * time.Second

// pageText is the text of the page as rendered, with that of its same-origin frames (the
// Temporal UI renders markdown in one).
const pageText = `(() => {
	const texts = [document.body ? document.body.innerText : ""];
	for (const frame of document.querySelectorAll("iframe")) {
		try {
			if (frame.contentDocument && frame.contentDocument.body) texts.push(frame.contentDocument.body.innerText);
		} catch (e) {}
	}
	return texts.join("\n");
})()`

// Browser is one headless chromium with a profile of its own.
type Browser struct {
	ctx     context.Context // the browser's: tabs are opened from it
	cancel  func()
	dataDir string
}

// Start starts chromium headless with a fresh profile.
func Start(ctx context.Context) (*Browser, error) {
	path, err := exec.LookPath(Executable)
	if err != nil {
		return nil, fmt.Errorf("%s is not installed (hack/install-chromium.sh installs it): %w", Executable, err)
	}
	dataDir, err := os.MkdirTemp("", "karmadaflow-chromium-")
	if err != nil {
		return nil, err
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(dataDir),
		chromedp.WindowSize(1600, 1200),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("no-proxy-server", true),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"),
	)
	browserCtx, cancelBrowser := chromedp.NewContext(allocCtx)
	b := &Browser{ctx: browserCtx, dataDir: dataDir, cancel: func() { cancelBrowser(); cancelAlloc() }}
	if err := chromedp.Run(browserCtx); err != nil { // starts the browser
		b.Close()
		return nil, fmt.Errorf("starting %s: %w", path, err)
	}
	return b, nil
}

// closeTimeout bounds how long Close waits for chromium to exit.
const closeTimeout = 10 * time.Second

// Close ends chromium and removes its profile. Chromium is asked to close and awaited first:
// it writes to its profile as it exits, and a profile removed before that was left behind.
func (b *Browser) Close() {
	ctx, cancel := context.WithTimeout(b.ctx, closeTimeout)
	_ = chromedp.Cancel(ctx)
	cancel()
	b.cancel()
	_ = os.RemoveAll(b.dataDir)
}

// NotFoundError says which patterns a page did not show in time, with its text, and where
// its DOM was saved.
type NotFoundError struct {
	URL     string
	Missing []string
	Text    string
	DOMFile string
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("%s does not show %q; DOM saved to %s; the page reads:\n%s", e.URL, e.Missing, e.DOMFile, e.Text)
}

// Find opens url in a new tab and waits, until timeout, for its text to match every pattern,
// reloading it now and then. It returns the text that matched, or a *NotFoundError with the
// page as it was.
func (b *Browser) Find(url string, timeout time.Duration, patterns ...*regexp.Regexp) (string, error) {
	tab, cancel := chromedp.NewContext(b.ctx)
	defer cancel()
	// The tab lives as long as the context of its first run: open it outside the timeout, so
	// that the DOM can still be read once the timeout is over.
	if err := chromedp.Run(tab); err != nil {
		return "", fmt.Errorf("opening a tab: %w", err)
	}
	ctx, cancelTimeout := context.WithTimeout(tab, timeout)
	defer cancelTimeout()

	var text string
	var missing []string
	loaded := time.Time{}
	for {
		if time.Since(loaded) >= reloadEvery {
			if err := chromedp.Run(ctx, chromedp.Navigate(url)); err != nil && ctx.Err() == nil {
				return "", fmt.Errorf("opening %s: %w", url, err)
			}
			loaded = time.Now()
		}
		if err := chromedp.Run(ctx, chromedp.Evaluate(pageText, &text)); err != nil && ctx.Err() == nil {
			text = "" // the page is between two renderings; read it again
		}
		missing = unmatched(text, patterns)
		if len(missing) == 0 {
			return text, nil
		}
		select {
		case <-ctx.Done():
			return "", &NotFoundError{URL: url, Missing: missing, Text: text, DOMFile: b.saveDOM(tab)}
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func unmatched(text string, patterns []*regexp.Regexp) []string {
	var missing []string
	for _, p := range patterns {
		if !p.MatchString(text) {
			missing = append(missing, p.String())
		}
	}
	return missing
}

// saveDOM writes the tab's DOM to a file that outlives the test and returns its path, or why
// it could not.
func (b *Browser) saveDOM(tab context.Context) string {
	ctx, cancel := context.WithTimeout(tab, 10*time.Second)
	defer cancel()
	var dom string
	err := chromedp.Run(ctx, chromedp.Evaluate(`document.documentElement.outerHTML`, &dom))
	if err == nil {
		var f *os.File
		if f, err = os.CreateTemp("", "karmadaflow-page-*.html"); err == nil {
			_, err = f.WriteString(dom)
			err = errors.Join(err, f.Close())
			if err == nil {
				return f.Name()
			}
		}
	}
	return "nowhere (" + err.Error() + ")"
}
