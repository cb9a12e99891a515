package nodeproto

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

// server accepts WebSockets and runs serve on each; its errors go to errs.
func server(t *testing.T, serve func(*Conn) error) (string, chan error) {
	t.Helper()
	errs := make(chan error, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := Accept(w, r)
		if err != nil {
			errs <- err
			return
		}
		errs <- serve(c)
		c.Close(CloseNormal, "")
	}))
	t.Cleanup(srv.Close)
	return srv.URL, errs
}

func dialT(t *testing.T, url string) *Conn {
	t.Helper()
	c, _, err := DialURL(context.Background(), url+"/ws", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(CloseNormal, "") })
	return c
}

func echo(c *Conn) error {
	for {
		m, err := c.ReadMessage()
		if err != nil {
			return err
		}
		if err := c.WriteMessage(m); err != nil {
			return err
		}
	}
}

func TestEchoAcrossLengthEncodings(t *testing.T) {
	url, _ := server(t, echo)
	c := dialT(t, url)
	for _, n := range []int{0, 1, 125, 126, 65535, 65536, 200000} {
		msg := bytes.Repeat([]byte{'x'}, n)
		if err := c.WriteMessage(msg); err != nil {
			t.Fatal(err)
		}
		got, err := c.ReadMessage()
		if err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("length %d: got %d bytes, %v", n, len(got), err)
		}
	}
}

// TestFragmentsAndPing sends a message in two masked fragments with a ping
// between them: the server reassembles it and answers the ping.
func TestFragmentsAndPing(t *testing.T) {
	url, _ := server(t, echo)
	c := dialT(t, url)
	c.wmu.Lock()
	c.c.Write(maskedFrame(0x01, false, []byte("hel")))
	c.c.Write(maskedFrame(opPing, true, []byte("p")))
	c.c.Write(maskedFrame(opContinuation, true, []byte("lo")))
	c.wmu.Unlock()
	got, err := c.ReadMessage() // the pong is skipped
	if err != nil || string(got) != "hello" {
		t.Fatalf("got %q, %v", got, err)
	}
}

func maskedFrame(op byte, fin bool, p []byte) []byte {
	b0 := op
	if fin {
		b0 |= 0x80
	}
	mask := []byte{1, 2, 3, 4}
	out := []byte{b0, 0x80 | byte(len(p))}
	out = append(out, mask...)
	for i, x := range p {
		out = append(out, x^mask[i%4])
	}
	return out
}

func TestProtocolViolations(t *testing.T) {
	for _, tc := range []struct {
		name  string
		frame []byte
	}{
		{"unmasked client frame", []byte{0x81, 0x01, 'x'}},
		{"binary message", maskedFrame(opBinary, true, []byte("x"))},
		{"continuation first", maskedFrame(opContinuation, true, []byte("x"))},
		{"reserved bits", append([]byte{0xC1}, maskedFrame(opText, true, []byte("x"))[1:]...)},
		{"fragmented control frame", maskedFrame(opPing, false, nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, errs := server(t, echo)
			c := dialT(t, url)
			c.c.Write(tc.frame)
			if err := <-errs; err == nil || errors.Is(err, ErrClosed) {
				t.Fatalf("server read %v", err)
			}
		})
	}
}

func TestCloseCodeReachesThePeer(t *testing.T) {
	url, _ := server(t, func(c *Conn) error { return c.Close(CloseRemoved, "node removed") })
	c := dialT(t, url)
	_, err := c.ReadMessage()
	var ce *CloseError
	if !errors.As(err, &ce) || ce.Code != CloseRemoved || ce.Reason != "node removed" || !errors.Is(err, ErrClosed) {
		t.Fatalf("read %v", err)
	}
}

func TestRefusedUpgrade(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":{"code":"invalid_node_credential"}}`, http.StatusUnauthorized)
	}))
	defer srv.Close()
	_, resp, err := DialURL(context.Background(), srv.URL+"/ws", nil, nil)
	if err == nil || resp == nil || resp.StatusCode != 401 {
		t.Fatalf("dial: %v %v", resp, err)
	}
	// A plain request to Accept is answered 400.
	url, errs := server(t, echo)
	r, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != 400 || <-errs == nil {
		t.Fatalf("plain GET: HTTP %d", r.StatusCode)
	}
}
