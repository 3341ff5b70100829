"""Training, calibration, corpora and evaluation: the developers' side of the model, above the
runtime (which never imports it) and left out of the wheel and the bundle."""
