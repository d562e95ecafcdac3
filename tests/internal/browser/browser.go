// Package browser drives a headless Chromium for the web console's
// end-to-end tests over the DevTools protocol on a pipe
// (--remote-debugging-pipe: JSON messages ending in NUL on fds 3 and 4),
// so no WebSocket library and no driver download are needed.
package browser

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"
)

// Path is where Debian's chromium package installs the browser.
const Path = "/usr/bin/chromium"

// Flags keep a headless Chromium quiet on a closed network: without
// --disable-background-networking it keeps trying to reach Google.
var Flags = []string{
	"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
	"--disable-background-networking", "--disable-component-update", "--disable-sync",
	"--disable-default-apps", "--disable-extensions", "--mute-audio", "--hide-scrollbars",
	"--window-size=1400,1000", "--remote-debugging-pipe",
}

// Browser is one Chromium process.
type Browser struct {
	cmd *exec.Cmd
	w   *os.File

	mu      sync.Mutex
	nextID  int
	pending map[int]chan reply
	closed  chan struct{}
	err     error
}

type reply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// Start starts Chromium (skipping t when it is not installed); it is
// closed when t ends.
func Start(t testing.TB) *Browser {
	t.Helper()
	if _, err := os.Stat(Path); err != nil {
		t.Skipf("chromium not installed at %s (Debian: apt-get install chromium): %v", Path, err)
	}
	profile := t.TempDir()
	toChrome, ourEnd, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	fromChrome, chromeEnd, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	args := append(append([]string{}, Flags...), "--user-data-dir="+profile, "about:blank")
	cmd := exec.Command(Path, args...)
	cmd.ExtraFiles = []*os.File{toChrome, chromeEnd} // fds 3 and 4
	if err := cmd.Start(); err != nil {
		t.Fatalf("browser: start chromium: %v", err)
	}
	_ = toChrome.Close()
	_ = chromeEnd.Close()
	b := &Browser{cmd: cmd, w: ourEnd, pending: map[int]chan reply{}, closed: make(chan struct{})}
	go b.read(bufio.NewReaderSize(fromChrome, 1<<20))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, _ = b.call(ctx, "", "Browser.close", nil)
		cancel()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		_ = ourEnd.Close()
		_ = fromChrome.Close()
	})
	return b
}

func (b *Browser) read(r *bufio.Reader) {
	defer close(b.closed)
	for {
		msg, err := r.ReadBytes(0)
		if err != nil {
			b.mu.Lock()
			b.err = fmt.Errorf("browser: devtools pipe: %w", err)
			b.mu.Unlock()
			return
		}
		var m struct {
			ID int `json:"id"`
			reply
		}
		if json.Unmarshal(msg[:len(msg)-1], &m) != nil || m.ID == 0 {
			continue // an event
		}
		b.mu.Lock()
		ch := b.pending[m.ID]
		delete(b.pending, m.ID)
		b.mu.Unlock()
		if ch != nil {
			ch <- m.reply
		}
	}
}

// call sends one command (to a page's session when sessionID is set).
func (b *Browser) call(ctx context.Context, sessionID, method string, params any) (json.RawMessage, error) {
	b.mu.Lock()
	if b.err != nil {
		b.mu.Unlock()
		return nil, b.err
	}
	b.nextID++
	id := b.nextID
	ch := make(chan reply, 1)
	b.pending[id] = ch
	b.mu.Unlock()
	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if sessionID != "" {
		msg["sessionId"] = sessionID
	}
	data, err := json.Marshal(msg)
	if err != nil {
		return nil, err
	}
	if _, err := b.w.Write(append(data, 0)); err != nil {
		return nil, fmt.Errorf("browser: %s: %w", method, err)
	}
	select {
	case r := <-ch:
		if r.Error != nil {
			return nil, fmt.Errorf("browser: %s: %s (%d)", method, r.Error.Message, r.Error.Code)
		}
		return r.Result, nil
	case <-b.closed:
		return nil, fmt.Errorf("browser: %s: chromium went away", method)
	case <-ctx.Done():
		return nil, fmt.Errorf("browser: %s: %w", method, ctx.Err())
	}
}

// Page is one tab.
type Page struct {
	b       *Browser
	session string
}

// NewPage opens a tab at about:blank.
func (b *Browser) NewPage(t testing.TB) *Page {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := b.call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"})
	if err != nil {
		t.Fatal(err)
	}
	var target struct {
		TargetID string `json:"targetId"`
	}
	_ = json.Unmarshal(res, &target)
	res, err = b.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true})
	if err != nil {
		t.Fatal(err)
	}
	var att struct {
		SessionID string `json:"sessionId"`
	}
	_ = json.Unmarshal(res, &att)
	p := &Page{b: b, session: att.SessionID}
	for _, m := range []string{"Page.enable", "Runtime.enable"} {
		if _, err := b.call(ctx, p.session, m, nil); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// Navigate loads url.
func (p *Page) Navigate(t testing.TB, url string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := p.b.call(ctx, p.session, "Page.navigate", map[string]any{"url": url}); err != nil {
		t.Fatal(err)
	}
}

// Eval evaluates a JavaScript expression (awaiting a promise) and decodes
// its value into out (may be nil).
func (p *Page) Eval(expr string, out any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := p.b.call(ctx, p.session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true})
	if err != nil {
		return err
	}
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return err
	}
	if r.ExceptionDetails != nil {
		return fmt.Errorf("browser: %s: %s %s", expr, r.ExceptionDetails.Text, r.ExceptionDetails.Exception.Description)
	}
	if out == nil || len(r.Result.Value) == 0 {
		return nil
	}
	return json.Unmarshal(r.Result.Value, out)
}

// MustEval is Eval failing t.
func (p *Page) MustEval(t testing.TB, expr string, out any) {
	t.Helper()
	if err := p.Eval(expr, out); err != nil {
		t.Fatal(err)
	}
}

// WaitFor polls a JavaScript condition until it is true, failing t after
// timeout with what describe (an expression) says about the page.
func (p *Page) WaitFor(t testing.TB, cond string, timeout time.Duration, describe string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var lastErr error
	for time.Now().Before(deadline) {
		var ok bool
		if lastErr = p.Eval("Boolean("+cond+")", &ok); lastErr == nil && ok {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	var state string
	_ = p.Eval(describe, &state)
	t.Fatalf("browser: %s still false after %v (err %v); page: %s", cond, timeout, lastErr, state)
}

// Screenshot saves the whole page as PNG at path.
func (p *Page) Screenshot(t testing.TB, path string) {
	t.Helper()
	var h float64
	p.MustEval(t, "document.documentElement.scrollHeight", &h)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := p.b.call(ctx, p.session, "Page.captureScreenshot", map[string]any{
		"format": "png", "captureBeyondViewport": true,
		"clip": map[string]any{"x": 0, "y": 0, "width": 1400, "height": max(h, 200), "scale": 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Data string `json:"data"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		t.Fatal(err)
	}
	png, err := base64.StdEncoding.DecodeString(r.Data)
	if err != nil || len(png) == 0 {
		t.Fatal(errors.Join(errors.New("browser: empty screenshot"), err))
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
}
