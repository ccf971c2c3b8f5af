// placeholder: written by the importer helper
