//! HTTP/1.1 download: a sans-IO GET server for the bench files and a GET client that counts and checksums what arrives.
