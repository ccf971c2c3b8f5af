// placeholder: written by a converter helper
