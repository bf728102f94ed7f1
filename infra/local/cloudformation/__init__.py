"""CloudFormation, locally: the SAM template read and translated, then deployed into moto."""
