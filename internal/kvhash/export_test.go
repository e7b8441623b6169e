package kvhash

// UserKey is userKey, for the fuzz test.
var UserKey = userKey
