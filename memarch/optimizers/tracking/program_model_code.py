"""The models-from-code entry point of memarch's pyfunc model (`program_model.ProgramModel`):
MLflow copies this file into the logged model and runs it at load, so nothing is pickled."""
import warnings

import mlflow

from memarch.optimizers.tracking.program_model import ProgramModel

with warnings.catch_warnings():  # "add type hints to predict": the logged signature is the schema
    warnings.filterwarnings("ignore", message=".*type hints.*", category=UserWarning)
    mlflow.models.set_model(ProgramModel())
