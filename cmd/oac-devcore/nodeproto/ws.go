package nodeproto

import (
	"bufio"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// MaxMessage bounds one message (all its fragments) in bytes.
const MaxMessage = 1 << 20

// Close codes used by the stand-ins.
const (
	CloseNormal          = 1000
	CloseProtocolError   = 1002
	CloseTooBig          = 1009
	ClosePolicyViolation = 1008
	// CloseRemoved: Core removed the node; its credential is no longer
	// accepted (the application range 4000-4999, 4000+HTTP 401).
	CloseRemoved = 4401
)

const (
	opContinuation = 0x0
	opText         = 0x1
	opBinary       = 0x2
	opClose        = 0x8
	opPing         = 0x9
	opPong         = 0xA
)

// acceptGUID is RFC 6455's fixed key suffix.
const acceptGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// ErrClosed: the peer closed the connection (*CloseError carries its code).
var ErrClosed = errors.New("connection closed")

// CloseError is the peer's close frame.
type CloseError struct {
	Code   int
	Reason string
}

func (e *CloseError) Error() string {
	return fmt.Sprintf("%v by the peer (code %d %s)", ErrClosed, e.Code, e.Reason)
}

// Unwrap lets callers test with errors.Is(err, ErrClosed).
func (e *CloseError) Unwrap() error { return ErrClosed }

// Conn is one WebSocket connection. ReadMessage is for one goroutine;
// WriteMessage and Close may be called from any.
type Conn struct {
	c      net.Conn
	r      *bufio.Reader
	client bool // masks its frames
	wmu    sync.Mutex
	closed bool
}

func acceptKey(key string) string {
	h := sha1.Sum([]byte(key + acceptGUID))
	return base64.StdEncoding.EncodeToString(h[:])
}

func headerHasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// IsUpgrade reports whether r asks for a WebSocket.
func IsUpgrade(r *http.Request) bool {
	return r.Method == http.MethodGet && headerHasToken(r.Header, "Connection", "upgrade") && headerHasToken(r.Header, "Upgrade", "websocket")
}

// Accept completes the server side of the opening handshake. On error it
// has answered the request with 400 (or the connection is unusable).
func Accept(w http.ResponseWriter, r *http.Request) (*Conn, error) {
	key := r.Header.Get("Sec-WebSocket-Key")
	if k, err := base64.StdEncoding.DecodeString(key); !IsUpgrade(r) || r.Header.Get("Sec-WebSocket-Version") != "13" || err != nil || len(k) != 16 {
		http.Error(w, "expected a WebSocket version 13 upgrade", http.StatusBadRequest)
		return nil, errors.New("websocket accept: not a version 13 upgrade")
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "connection cannot be upgraded", http.StatusInternalServerError)
		return nil, errors.New("websocket accept: response writer cannot hijack")
	}
	c, rw, err := hj.Hijack()
	if err != nil {
		return nil, fmt.Errorf("websocket accept: %w", err)
	}
	resp := "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " + acceptKey(key) + "\r\n\r\n"
	if _, err := rw.WriteString(resp); err == nil {
		err = rw.Flush()
	}
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("websocket accept: %w", err)
	}
	return &Conn{c: c, r: rw.Reader}, nil
}

// Dial opens a WebSocket over conn (already connected, TLS done) to the
// request URI path?query on host, with the extra request headers. A
// refused upgrade returns the response (body read, at most 64 KiB) and
// an error.
func Dial(conn net.Conn, host, uri string, header http.Header) (*Conn, *http.Response, error) {
	var k [16]byte
	rand.Read(k[:])
	key := base64.StdEncoding.EncodeToString(k[:])
	var b strings.Builder
	fmt.Fprintf(&b, "GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n", uri, host, key)
	for name, vs := range header {
		for _, v := range vs {
			fmt.Fprintf(&b, "%s: %s\r\n", name, v)
		}
	}
	b.WriteString("\r\n")
	if _, err := io.WriteString(conn, b.String()); err != nil {
		return nil, nil, fmt.Errorf("websocket handshake with %s: %w", host, err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodGet})
	if err != nil {
		return nil, nil, fmt.Errorf("websocket handshake with %s: %w", host, err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		resp.Body = io.NopCloser(strings.NewReader(string(body)))
		return nil, resp, fmt.Errorf("websocket handshake with %s: HTTP %d", host, resp.StatusCode)
	}
	if !headerHasToken(resp.Header, "Upgrade", "websocket") || resp.Header.Get("Sec-WebSocket-Accept") != acceptKey(key) {
		return nil, resp, fmt.Errorf("websocket handshake with %s: bad accept", host)
	}
	return &Conn{c: conn, r: br, client: true}, resp, nil
}

// SetReadDeadline bounds the next reads.
func (c *Conn) SetReadDeadline(t time.Time) error { return c.c.SetReadDeadline(t) }

// ReadMessage returns the next text message. Pings are answered, pongs
// ignored; a close frame is answered and returned as *CloseError.
func (c *Conn) ReadMessage() ([]byte, error) {
	var msg []byte
	started := false
	for {
		fin, op, payload, err := c.readFrame()
		if err != nil {
			return nil, err
		}
		switch op {
		case opPing:
			if err := c.writeFrame(opPong, payload); err != nil {
				return nil, err
			}
			continue
		case opPong:
			continue
		case opClose:
			ce := &CloseError{Code: 1005}
			if len(payload) >= 2 {
				ce.Code = int(binary.BigEndian.Uint16(payload))
				ce.Reason = string(payload[2:])
			}
			c.closeWith(CloseNormal, "")
			return nil, ce
		case opText, opBinary:
			if started {
				c.closeWith(CloseProtocolError, "message inside a message")
				return nil, errors.New("websocket: new message before the last one ended")
			}
			if op == opBinary {
				c.closeWith(CloseProtocolError, "binary messages are not used")
				return nil, errors.New("websocket: binary message")
			}
			started = true
		case opContinuation:
			if !started {
				c.closeWith(CloseProtocolError, "continuation without a message")
				return nil, errors.New("websocket: continuation without a message")
			}
		default:
			c.closeWith(CloseProtocolError, "unknown opcode")
			return nil, fmt.Errorf("websocket: unknown opcode %d", op)
		}
		if len(msg)+len(payload) > MaxMessage {
			c.closeWith(CloseTooBig, "message too big")
			return nil, fmt.Errorf("websocket: message larger than %d bytes", MaxMessage)
		}
		msg = append(msg, payload...)
		if fin {
			return msg, nil
		}
	}
}

// readFrame reads one frame, unmasking a client's.
func (c *Conn) readFrame() (fin bool, op byte, payload []byte, err error) {
	var h [2]byte
	if _, err = io.ReadFull(c.r, h[:]); err != nil {
		return
	}
	fin, op = h[0]&0x80 != 0, h[0]&0x0f
	if h[0]&0x70 != 0 {
		return false, 0, nil, errors.New("websocket: reserved bits set")
	}
	masked := h[1]&0x80 != 0
	if masked == c.client { // a server's frames are unmasked, a client's masked
		return false, 0, nil, errors.New("websocket: wrong masking")
	}
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		var e [2]byte
		if _, err = io.ReadFull(c.r, e[:]); err != nil {
			return
		}
		n = uint64(binary.BigEndian.Uint16(e[:]))
	case 127:
		var e [8]byte
		if _, err = io.ReadFull(c.r, e[:]); err != nil {
			return
		}
		n = binary.BigEndian.Uint64(e[:])
	}
	if op >= opClose && (n > 125 || !fin) {
		return false, 0, nil, errors.New("websocket: bad control frame")
	}
	if n > MaxMessage {
		return false, 0, nil, fmt.Errorf("websocket: frame larger than %d bytes", MaxMessage)
	}
	var mask [4]byte
	if masked {
		if _, err = io.ReadFull(c.r, mask[:]); err != nil {
			return
		}
	}
	payload = make([]byte, n)
	if _, err = io.ReadFull(c.r, payload); err != nil {
		return
	}
	if masked {
		for i := range payload {
			payload[i] ^= mask[i%4]
		}
	}
	return fin, op, payload, nil
}

// WriteMessage sends one text message in one frame.
func (c *Conn) WriteMessage(p []byte) error {
	if len(p) > MaxMessage {
		return fmt.Errorf("websocket: message larger than %d bytes", MaxMessage)
	}
	return c.writeFrame(opText, p)
}

func (c *Conn) writeFrame(op byte, p []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.closed {
		return net.ErrClosed
	}
	return c.writeFrameLocked(op, p)
}

func (c *Conn) writeFrameLocked(op byte, p []byte) error {
	buf := make([]byte, 0, len(p)+14)
	buf = append(buf, 0x80|op)
	var mbit byte
	if c.client {
		mbit = 0x80
	}
	switch n := len(p); {
	case n < 126:
		buf = append(buf, mbit|byte(n))
	case n <= 0xffff:
		buf = append(buf, mbit|126)
		buf = binary.BigEndian.AppendUint16(buf, uint16(n))
	default:
		buf = append(buf, mbit|127)
		buf = binary.BigEndian.AppendUint64(buf, uint64(n))
	}
	if c.client {
		var mask [4]byte
		rand.Read(mask[:])
		buf = append(buf, mask[:]...)
		for i, b := range p {
			buf = append(buf, b^mask[i%4])
		}
	} else {
		buf = append(buf, p...)
	}
	_, err := c.c.Write(buf)
	return err
}

// Close sends a close frame with code and reason (once) and closes the
// connection without waiting for the peer's answer.
func (c *Conn) Close(code int, reason string) error {
	c.closeWith(code, reason)
	return c.c.Close()
}

// closeWith sends a close frame once; later writes fail.
func (c *Conn) closeWith(code int, reason string) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.closed {
		return
	}
	p := binary.BigEndian.AppendUint16(nil, uint16(code))
	if len(reason) > 120 {
		reason = reason[:120]
	}
	c.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	c.writeFrameLocked(opClose, append(p, reason...))
	c.closed = true
}
