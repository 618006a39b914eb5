package h1

import "strconv"

// StatusText is the reason phrase for the statuses this kit answers with.
func StatusText(code int) string {
	switch code {
	case 200:
		return "OK"
	case 400:
		return "Bad Request"
	case 404:
		return "Not Found"
	case 405:
		return "Method Not Allowed"
	case 413:
		return "Content Too Large"
	case 431:
		return "Request Header Fields Too Large"
	case 500:
		return "Internal Server Error"
	case 501:
		return "Not Implemented"
	case 503:
		return "Service Unavailable"
	case 505:
		return "HTTP Version Not Supported"
	}
	return "Status " + strconv.Itoa(code)
}

// AppendStatusLine appends "HTTP/1.1 <code> <reason>\r\n".
func AppendStatusLine(dst []byte, code int) []byte {
	dst = append(dst, "HTTP/1.1 "...)
	dst = strconv.AppendInt(dst, int64(code), 10)
	dst = append(dst, ' ')
	dst = append(dst, StatusText(code)...)
	return append(dst, "\r\n"...)
}

// AppendHeader appends "name: value\r\n".
func AppendHeader(dst []byte, name, value string) []byte {
	dst = append(dst, name...)
	dst = append(dst, ": "...)
	dst = append(dst, value...)
	return append(dst, "\r\n"...)
}

// AppendHeaderInt appends "name: <decimal>\r\n" without allocating.
func AppendHeaderInt(dst []byte, name string, v int64) []byte {
	dst = append(dst, name...)
	dst = append(dst, ": "...)
	dst = strconv.AppendInt(dst, v, 10)
	return append(dst, "\r\n"...)
}

// AppendBody ends the header block with Content-Type, Content-Length and,
// when the connection is to close, "Connection: close" (or "Connection:
// keep-alive" for an HTTP/1.0 client that asked to keep it), then appends
// body unless the request was HEAD.
func AppendBody(dst []byte, body string, req *Request, keepAlive bool) []byte {
	dst = append(dst, "Content-Type: text/plain; charset=utf-8\r\n"...)
	dst = AppendHeaderInt(dst, "Content-Length", int64(len(body)))
	switch {
	case !keepAlive:
		dst = append(dst, "Connection: close\r\n"...)
	case req != nil && req.Minor == 0:
		dst = append(dst, "Connection: keep-alive\r\n"...)
	}
	dst = append(dst, "\r\n"...)
	if req != nil && req.IsHead() {
		return dst
	}
	return append(dst, body...)
}

// AppendError appends the whole answer to a request Parse refused: the status,
// the one-line reason and "Connection: close".
func AppendError(dst []byte, e *Error) []byte {
	dst = AppendStatusLine(dst, e.Status)
	return AppendBody(dst, e.Reason+"\n", nil, false)
}
