#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/containers/serve.sh — one HTTP answer per connection, for socat EXEC: reads the request
# head first (closing with unread bytes would send a reset that eats the answer).
while IFS= read -r line; do
	[ "${line%$'\r'}" = "" ] && break
done
printf 'HTTP/1.0 200 OK\r\nContent-Length: 21\r\n\r\nhello-from-container\n'
