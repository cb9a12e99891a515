// Package proxy is the installer's one proxy snapshot: the six variables
// http_proxy, https_proxy, no_proxy and their uppercase spellings, taken
// once from the installer's environment and resolved into three settings
// (CONTRACT §5.1, "Env file" in §10; DR:111).
//
// Each setting is resolved the way the generated bootstrap command
// normalises the variables: when the lowercase name is set, even to the
// empty string, it wins; else the uppercase name when that is set; else the
// setting is unset. An Env keeps whether each setting was set, because the
// child's environment and the service's env file carry a setting that was
// set empty and leave an unset one out. When an environment list names a
// variable twice, the first entry counts, as getenv reads it.
//
//	environment                      Env.HTTPS           Normalized()
//	-----------                      ---------           ------------
//	(neither)                        unset               (nothing)
//	HTTPS_PROXY=u                    set "u"             https_proxy=u HTTPS_PROXY=u
//	https_proxy=l HTTPS_PROXY=u      set "l"             https_proxy=l HTTPS_PROXY=l
//	https_proxy= HTTPS_PROXY=u       set ""              https_proxy= HTTPS_PROXY=
//
// Selector parses a snapshot for an HTTP client: the proxy URLs (http:// or
// https://, a bare host:port taken as http://) and the no_proxy list ("*",
// hosts and domains with their subdomains, IP addresses, CIDR prefixes, any
// of them with ":port"; loopback is not bypassed implicitly, as curl and
// Python behave). Every client of the installer uses this one parser.
//
// Values may hold credentials: String and GoString of an Env or a Setting
// name what is set, never a value, and the parser's errors name the
// variable, never its value.
package proxy
