package proxy

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// eventTooLarge is the end of a member's watch stream whose next event is larger than the
// proxy's bound: the event is never held whole.
type eventTooLarge struct {
	cluster string
	limit   int64
}

func (e *eventTooLarge) Error() string {
	return fmt.Sprintf("an event of cluster %s's watch is larger than the proxy's limit of %d bytes (--proxy-max-watch-event-bytes): the watch ends without it", e.cluster, e.limit)
}

// errorEvent is the ERROR event that tells the caller why its watch ends, as an API server
// ends a watch with one.
func (e *eventTooLarge) errorEvent() event {
	status := apierrors.NewInternalError(errors.New(e.Error())).ErrStatus
	status.APIVersion, status.Kind = "v1", "Status"
	object, _ := json.Marshal(status)
	return event{cluster: e.cluster, Type: "ERROR", Object: object}
}

// eventDecoder reads a member's watch stream one event at a time, reading no more than limit
// bytes beyond the end of the last event: an event larger than that ends the stream with
// eventTooLarge instead of being buffered whole.
type eventDecoder struct {
	dec     *json.Decoder
	counted *countingReader
	cluster string
	limit   int64
}

func newEventDecoder(body io.Reader, cluster string, limit int64) *eventDecoder {
	d := &eventDecoder{cluster: cluster, limit: limit}
	d.counted = &countingReader{r: body, decoder: d}
	d.dec = json.NewDecoder(d.counted)
	return d
}

// decode reads the next event into e.
func (d *eventDecoder) decode(e *event) error {
	err := d.dec.Decode(e)
	var tooLarge *eventTooLarge
	if errors.As(err, &tooLarge) {
		return tooLarge
	}
	return err
}

// countingReader reads for an eventDecoder, and fails once what it read goes limit bytes past
// the end of the decoder's last event (json.Decoder.InputOffset).
type countingReader struct {
	r       io.Reader
	read    int64
	decoder *eventDecoder
}

func (c *countingReader) Read(p []byte) (int, error) {
	ahead := c.read - c.decoder.dec.InputOffset() // read but not yet decoded: the event being read
	room := c.decoder.limit - ahead
	if room <= 0 {
		return 0, &eventTooLarge{cluster: c.decoder.cluster, limit: c.decoder.limit}
	}
	if int64(len(p)) > room+1 {
		p = p[:room+1] // one byte beyond the limit tells an event of exactly limit bytes apart
	}
	n, err := c.r.Read(p)
	c.read += int64(n)
	return n, err
}

// writeEvent writes e to the caller and flushes it.
func writeEvent(w http.ResponseWriter, e event) error {
	if _, err := w.Write(eventJSON(e)); err != nil {
		return err
	}
	if flusher, ok := w.(http.Flusher); ok {
		flusher.Flush()
	}
	return nil
}
