"""Media in: decoding to 16 kHz mono, speech activity, word timings, pauses and prosody per word gap."""
